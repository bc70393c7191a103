"""Shared set-up for the metal2vk Python tests (run with /usr/bin/python3 -m pytest python/tests)."""
import os
import sys
import tempfile

# Before the first device is created: 32-wide lavapipe subgroups (ignored by real GPUs), a private module cache.
os.environ.setdefault("LP_NATIVE_VECTOR_WIDTH", "1024")
os.environ.setdefault("M2V_CACHE_DIR", tempfile.mkdtemp(prefix="m2v-pytest-cache-"))

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import metal2vk as m2v  # noqa: E402


def run_simd(kernel, **kwargs):
    """Calls a kernel that uses simdgroup functions; skips (with the reason) where 32-wide simdgroups are refused."""
    try:
        return kernel(**kwargs)
    except m2v.UnsupportedError as e:
        pytest.skip(f"kernel needs 32-wide simdgroups; this device refuses it: {e}")


def stream_with(kernel):
    """A stream with `kernel` set; skips (with the reason) where the device refuses it (32-wide simdgroups)."""
    s = m2v.Stream()
    try:
        s.set_kernel(kernel)
    except m2v.UnsupportedError as e:
        pytest.skip(str(e).splitlines()[0])
    return s


def bind_arrays(stream, arrays):
    """Uploads each array into a buffer of its own, bound at buffer indices 0, 1, ...; returns the buffers."""
    bufs = []
    for i, a in enumerate(arrays):
        b = m2v.Buffer(a.nbytes)
        stream.upload(b, a)
        stream.set_buffer(b, i)
        bufs.append(b)
    return bufs


@pytest.fixture(autouse=True)
def no_validation_messages():
    """With M2V_VALIDATION=1 (as ctest runs it) any Vulkan validation message fails the test."""
    yield
    if os.environ.get("M2V_VALIDATION") == "1":
        msgs = m2v.validation_messages()
        assert not msgs, "Vulkan validation messages:\n" + "\n".join(msgs)


@pytest.fixture
def rng():
    return np.random.default_rng(int.from_bytes(os.urandom(4), "little"))


def assert_close(actual, expected, rtol, atol):
    np.testing.assert_allclose(np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64),
                               rtol=rtol, atol=atol)


@pytest.fixture(params=["shuffle", "cooperative"])
def matrix_path(request):
    """Runs a test once per simdgroup-matrix path (M2V_SIMDGROUP_MATRIX, read when a kernel is loaded): the
    parameter's value, restored afterwards. Tests skip the cooperative one where the device lacks it."""
    old = os.environ.get("M2V_SIMDGROUP_MATRIX")
    os.environ["M2V_SIMDGROUP_MATRIX"] = request.param
    yield request.param
    if old is None:
        del os.environ["M2V_SIMDGROUP_MATRIX"]
    else:
        os.environ["M2V_SIMDGROUP_MATRIX"] = old
