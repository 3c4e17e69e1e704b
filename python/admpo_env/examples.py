"""Small pure-Python environments with the Gymnasium API (no gymnasium, no numpy).

    PYTHONPATH=python python3 -m admpo_env admpo_env.examples:PointMass --port 5555
"""

import math
import random


class Box:
    """The part of gymnasium.spaces.Box that admpo_env reads."""

    def __init__(self, low, high, shape):
        self.low, self.high, self.shape = low, high, shape


class PointMass:
    """A point mass on a line pushed towards the origin.

    Observation (x, v), action a force in [-1, 1]; v += 0.05 a, x += v.
    Reward 1 - x^2 - 0.01 a^2 per step; the episode terminates when |x| > 2
    and is truncated after 200 steps.
    """

    max_episode_steps = 200

    def __init__(self):
        self.observation_space = Box(-math.inf, math.inf, (2,))
        self.action_space = Box([-1.0], [1.0], (1,))
        self.rng = random.Random(0)
        self.x = self.v = 0.0

    def reset(self, seed=None):
        if seed is not None:
            self.rng.seed(seed)
        self.x = self.rng.uniform(-1.5, 1.5)
        self.v = self.rng.uniform(-0.05, 0.05)
        return [self.x, self.v], {}

    def step(self, action):
        a = max(-1.0, min(1.0, float(action[0])))
        self.v += 0.05 * a
        self.x += self.v
        reward = 1.0 - self.x * self.x - 0.01 * a * a
        return [self.x, self.v], reward, abs(self.x) > 2.0, False, {}


class Trivial:
    """Does nothing, fast: the remote stepping overhead's benchmark (obs 11, action 3, as hopper)."""

    def __init__(self):
        self.observation_space = Box(-1.0, 1.0, (11,))
        self.action_space = Box(-1.0, 1.0, (3,))
        self.obs = [0.0] * 11

    def reset(self, seed=None):
        return self.obs, {}

    def step(self, action):
        return self.obs, 0.0, False, False, {}
