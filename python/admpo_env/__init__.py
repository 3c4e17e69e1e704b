"""Serve a Gymnasium-API environment to admpo over its remote environment protocol.

    PYTHONPATH=python python3 -m admpo_env MODULE:FACTORY --port 5555

FACTORY (a function or class in MODULE, called with no arguments once per
connection) returns any object with the Gymnasium API, found by duck typing:
reset(seed=...) -> (obs, info), step(action) -> (obs, reward, terminated,
truncated, info), observation_space and action_space with .shape (and the
action space with .low and .high). The gymnasium package is not needed;
numpy is used when the environment's values are numpy arrays. The protocol
is specified in docs/remote-envs.md.
"""

from .server import PROTOCOL_VERSION, EnvServer, load_factory, serve

__all__ = ["PROTOCOL_VERSION", "EnvServer", "load_factory", "serve"]
