"""Misbehaving environments for admpo's fault tests: each breaks at step 3."""

import math
import time

from admpo_env.examples import PointMass


class _Faulty(PointMass):
    def step(self, action):
        self.n = getattr(self, "n", 0) + 1
        obs, r, term, trunc, info = super().step(action)
        if self.n == 3:
            return self.fault(obs, r, term, trunc, info)
        return obs, r, term, trunc, info


class NaNObs(_Faulty):
    def fault(self, obs, r, term, trunc, info):
        return [obs[0], math.nan], r, term, trunc, info


class WrongShape(_Faulty):
    def fault(self, obs, r, term, trunc, info):
        return obs + [0.0], r, term, trunc, info


class Slow(_Faulty):
    def fault(self, obs, r, term, trunc, info):
        time.sleep(3)
        return obs, r, term, trunc, info


class Raises(_Faulty):
    def fault(self, obs, r, term, trunc, info):
        raise RuntimeError("the robot fell off the table")
