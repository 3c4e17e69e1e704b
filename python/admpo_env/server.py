"""The admpo remote environment server (docs/remote-envs.md), standard library only."""

import importlib
import math
import os
import socketserver
import struct
import sys
import traceback
from array import array

PROTOCOL_VERSION = 1

HELLO, RESET, STEP, CLOSE = 0x01, 0x02, 0x03, 0x04
SPEC, OBS, STEP_REPLY, ERROR = 0x81, 0x82, 0x83, 0xFF
# Batches of env copies (optional; offered with --copies N >= 2).
COPIES, RESET_BATCH, STEP_BATCH = 0x05, 0x06, 0x07
COPIES_REPLY, OBS_BATCH, STEP_BATCH_REPLY = 0x85, 0x86, 0x87
MAX_FRAME = 1 << 24
MAX_COPIES = 4096
_LITTLE = sys.byteorder == "little"

try:  # optional: actions are handed to the env as numpy arrays when it is there
    import numpy as _np
except ImportError:
    _np = None


def load_factory(target):
    """Return the callable MODULE:FACTORY names (FACTORY may be dotted)."""
    mod, sep, attr = target.partition(":")
    if not sep or not mod or not attr:
        raise ValueError(f"{target!r}: want MODULE:FACTORY, e.g. my_robot:make_env")
    try:
        obj = importlib.import_module(mod)
    except ImportError as e:
        raise ValueError(f"{target}: cannot import module {mod!r} (is it on PYTHONPATH?): {e}") from e
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"{target}: module {mod!r} has no {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ValueError(f"{target}: {attr!r} is not callable")
    return obj


def _flat(x):
    """Flatten a number, a (nested) list/tuple or a numpy array into a list of floats."""
    if hasattr(x, "tolist"):
        x = x.tolist()
    if isinstance(x, (list, tuple)):
        out = []
        for v in x:
            out.extend(_flat(v))
        return out
    return [float(x)]


def _size(shape):
    n = 1
    for d in shape or ():
        n *= int(d)
    return n


def _bounds(v, n, what):
    b = _flat(v)
    if len(b) == 1 and n != 1:
        b = b * n
    if len(b) != n:
        raise ValueError(f"action space {what} has {len(b)} values for {n} actions")
    return b


def _shape_like(flat, shape):
    """Reshape a flat list to shape, as a numpy array when numpy is available."""
    if _np is not None:
        return _np.asarray(flat, dtype=_np.float64).reshape(tuple(shape) if shape else ())
    if not shape or len(shape) == 1:
        return flat if shape else flat[0]

    def nest(v, dims):
        if len(dims) == 1:
            return v
        step = len(v) // dims[0]
        return [nest(v[i * step:(i + 1) * step], dims[1:]) for i in range(dims[0])]

    return nest(flat, list(shape))


def _f64s(values):
    a = array("d", values)
    if not _LITTLE:
        a.byteswap()
    return a.tobytes()


def _vec(values):
    return struct.pack("<I", len(values)) + _f64s(values)


class EnvServer:
    """Serves one environment instance over one connection (file-like rfile/wfile)."""

    def __init__(self, env, name):
        self.env = env
        self.name = name
        act = env.action_space
        obs = env.observation_space
        self.act_shape = tuple(getattr(act, "shape", None) or ())
        self.obs_dim = _size(getattr(obs, "shape", None) or ())
        self.act_dim = _size(self.act_shape)
        self.low = _bounds(act.low, self.act_dim, "low")
        self.high = _bounds(act.high, self.act_dim, "high")
        spec = getattr(env, "spec", None)
        self.max_steps = int(getattr(spec, "max_episode_steps", None) or getattr(env, "max_episode_steps", 0) or 0)

    def spec_payload(self):
        name = self.name.encode()
        return (struct.pack("<IIII", PROTOCOL_VERSION, self.obs_dim, self.act_dim, self.max_steps)
                + _f64s(self.low) + _f64s(self.high) + struct.pack("<I", len(name)) + name)

    def reset_obs(self, has_seed, seed):
        """Reset the env; return its observation as a flat list."""
        out = self.env.reset(seed=seed) if has_seed else self.env.reset()
        # Gymnasium returns (obs, info); older APIs the observation alone.
        if isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], dict):
            out = out[0]
        return _flat(out)

    def reset(self, payload):
        has_seed, seed = struct.unpack("<Bq", payload)
        return OBS, _vec(self.reset_obs(has_seed, seed))

    def step_values(self, action):
        """Step the env with a flat action list; return (obs list, reward, flags)."""
        out = self.env.step(_shape_like(action, self.act_shape))
        if len(out) == 5:
            obs, reward, terminated, truncated, _ = out
        elif len(out) == 4:  # the old Gym API: (obs, reward, done, info)
            obs, reward, done, info = out
            truncated = bool(info.get("TimeLimit.truncated", False)) if isinstance(info, dict) else False
            terminated = bool(done) and not truncated
        else:
            raise ValueError(f"step returned {len(out)} values, want 5 (obs, reward, terminated, truncated, info)")
        flags = (1 if terminated else 0) | (2 if truncated else 0)
        return _flat(obs), float(reward), flags

    def step(self, payload):
        (n,) = struct.unpack_from("<I", payload)
        if len(payload) != 4 + 8 * n:
            raise ValueError(f"step frame of {len(payload)} bytes for {n} action values")
        obs, reward, flags = self.step_values(_unpack_f64s(payload[4:]))
        return STEP_REPLY, struct.pack("<dB", reward, flags) + _vec(obs)

    def close(self):
        close = getattr(self.env, "close", None)
        if callable(close):
            try:
                close()
            except Exception:
                pass


def _unpack_f64s(b):
    a = array("d")
    a.frombytes(b)
    if not _LITTLE:
        a.byteswap()
    return a.tolist()


class Copies:
    """A connection's env copies: copy 0 is the connection's env; COPIES adds more (at most max_copies)."""

    def __init__(self, first, factory, name, max_copies):
        self.envs = [first]
        self.factory, self.name, self.max_copies = factory, name, max_copies

    def close(self):
        for e in self.envs:
            e.close()

    def grant(self, payload):
        (n,) = struct.unpack("<I", payload)
        if not 1 <= n <= MAX_COPIES:
            raise ValueError(f"copies: {n} copies asked for (want 1 to {MAX_COPIES})")
        if len(self.envs) > 1:
            raise ValueError(f"copies: this connection holds {len(self.envs)} copies already")
        first = self.envs[0]
        while len(self.envs) < min(n, self.max_copies):
            e = EnvServer(self.factory(), self.name)
            if (e.obs_dim, e.act_dim) != (first.obs_dim, first.act_dim):
                e.close()
                raise ValueError(f"copies: copy {len(self.envs)} has {e.obs_dim} observation and {e.act_dim} action values, "
                                 f"copy 0 {first.obs_dim} and {first.act_dim}")
            self.envs.append(e)
        return COPIES_REPLY, struct.pack("<I", len(self.envs))

    def _indices(self, idx):
        if not 1 <= len(idx) <= len(self.envs) or len(set(idx)) != len(idx) or any(not 0 <= k < len(self.envs) for k in idx):
            raise ValueError(f"a batch of copies {idx} for {len(self.envs)} copies (each below it, once)")

    def _obs(self, k, obs, what):
        if len(obs) != self.envs[0].obs_dim:
            raise ValueError(f"{what}: copy {k} gave {len(obs)} observation values, the spec says {self.envs[0].obs_dim}")
        return obs

    def reset_batch(self, payload):
        (n,) = struct.unpack_from("<I", payload)
        if len(payload) != 4 + 13 * n:
            raise ValueError(f"reset batch frame of {len(payload)} bytes for {n} copies")
        entries = [struct.unpack_from("<IBq", payload, 4 + 13 * i) for i in range(n)]
        self._indices([k for k, _, _ in entries])
        out = [struct.pack("<II", n, self.envs[0].obs_dim)]
        for k, has_seed, seed in entries:
            try:
                obs = self._obs(k, self.envs[k].reset_obs(has_seed, seed), "reset")
            except Exception as e:
                raise ValueError(f"reset batch: copy {k}: {_error_text(e)}") from e
            out.append(_f64s(obs))
        return OBS_BATCH, b"".join(out)

    def step_batch(self, payload):
        n, ad = struct.unpack_from("<II", payload)
        if ad != self.envs[0].act_dim:
            raise ValueError(f"step batch: {ad} action values per copy, the spec says {self.envs[0].act_dim}")
        if len(payload) != 8 + 4 * n + 8 * n * ad:
            raise ValueError(f"step batch frame of {len(payload)} bytes for {n} copies of {ad} actions")
        idx = list(struct.unpack_from(f"<{n}I", payload, 8))
        self._indices(idx)
        acts = _unpack_f64s(payload[8 + 4 * n:])
        head, obs_out = [struct.pack("<II", n, self.envs[0].obs_dim)], []
        for i, k in enumerate(idx):
            try:
                obs, reward, flags = self.envs[k].step_values(acts[i * ad:(i + 1) * ad])
                obs_out.append(_f64s(self._obs(k, obs, "step")))
            except Exception as e:
                raise ValueError(f"step batch: copy {k}: {_error_text(e)}") from e
            head.append(struct.pack("<dB", reward, flags))
        return STEP_BATCH_REPLY, b"".join(head + obs_out)


def _read_frame(rfile):
    head = rfile.read(4)
    if len(head) < 4:
        return None, None
    (n,) = struct.unpack("<I", head)
    if n == 0 or n > MAX_FRAME:
        raise ValueError(f"frame of {n} bytes: not the admpo environment protocol")
    body = rfile.read(n)
    if len(body) < n:
        return None, None
    return body[0], body[1:]


def _write_frame(wfile, typ, payload=b""):
    wfile.write(struct.pack("<IB", 1 + len(payload), typ) + payload)
    wfile.flush()


def _error_text(e):
    return "".join(traceback.format_exception_only(type(e), e)).strip()


def _handler(factory, name, copies=1):
    class Handler(socketserver.StreamRequestHandler):
        def handle(self):
            typ, payload = _read_frame(self.rfile)
            if typ != HELLO:
                return
            (version,) = struct.unpack("<I", payload[:4])
            if version != PROTOCOL_VERSION:
                _write_frame(self.wfile, ERROR, f"protocol version {version}: this server speaks {PROTOCOL_VERSION}".encode())
                return
            try:
                srv = EnvServer(factory(), name)
            except Exception as e:
                _write_frame(self.wfile, ERROR, f"making the environment ({name}): {_error_text(e)}".encode())
                return
            envs = Copies(srv, factory, name, copies)
            batched = {COPIES: envs.grant, RESET_BATCH: envs.reset_batch, STEP_BATCH: envs.step_batch} if copies >= 2 else {}
            try:
                _write_frame(self.wfile, SPEC, srv.spec_payload())
                while True:
                    typ, payload = _read_frame(self.rfile)
                    if typ is None or typ == CLOSE:
                        return
                    try:
                        if typ == RESET:
                            out = srv.reset(payload)
                        elif typ == STEP:
                            out = srv.step(payload)
                        elif typ in batched:
                            out = batched[typ](payload)
                        else:
                            raise ValueError(f"unknown request type 0x{typ:02x}")
                    except Exception as e:
                        out = (ERROR, _error_text(e).encode())
                    _write_frame(self.wfile, *out)
            except (BrokenPipeError, ConnectionResetError):
                return
            finally:
                envs.close()

        def setup(self):
            super().setup()
            if hasattr(self.connection, "setsockopt"):
                import socket
                try:
                    self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                except OSError:
                    pass  # a Unix socket

    return Handler


class _TCPServer(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


if hasattr(socketserver, "ThreadingUnixStreamServer"):
    class _UnixServer(socketserver.ThreadingUnixStreamServer):
        daemon_threads = True


def serve(factory, name="env", host="127.0.0.1", port=5555, unix=None, copies=1):
    """Serve environments made by factory (one per connection) until interrupted.

    With copies >= 2 a connection may ask for up to that many env copies and
    step them in batches (docs/remote-envs.md). Prints the address it listens
    on ("admpo_env: serving NAME on tcp://HOST:PORT") to stderr.
    """
    if unix:
        if os.path.exists(unix):
            os.unlink(unix)
        server = _UnixServer(unix, _handler(factory, name, copies))
        addr = "unix://" + os.path.abspath(unix)
    else:
        server = _TCPServer((host, port), _handler(factory, name, copies))
        h, p = server.server_address[:2]
        addr = f"tcp://{h}:{p}"
    print(f"admpo_env: serving {name} on {addr}", file=sys.stderr, flush=True)
    with server:
        server.serve_forever()
