"""Work past its time budget fails alone.

A wait that outlives the stream's budget raises TimeoutError. A kernel built with abort checks (the default) is
stopped: the device, the stream and every buffer stay. One built without them cannot be stopped: the device is
faulted (the GPU may still be running the kernel), the process's next Stream opens a new device, and kernels
compiled before the fault are created again on it. Runs in a child process: a faulted device is deliberately
leaked, and the pytest process keeps its own.
"""
import pytest
import os
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(r'''
    import os, sys, tempfile
    ABORT_CHECKS = sys.argv[1] == "1"
    import numpy as np
    import metal2vk as m2v

    SOURCE = """
    #include <metal_stdlib>
    using namespace metal;
    // Far longer than a 1 ms budget on any device (tens of ms on a GPU, minutes on a CPU device: the child exits
    // without waiting for it).
    kernel void spin(device uint* out [[buffer(0)]], constant uint& rounds [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
      uint x = i;
      for (uint k = 0; k < rounds; ++k) x = x * 1664525u + 1013904223u;
      out[i] = x;
    }
    kernel void twice(device const float* a [[buffer(0)]], device float* b [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {
      b[i] = 2.0f * a[i];
    }
    """
    path = os.path.join(tempfile.mkdtemp(), "recovery.metal")
    with open(path, "w") as f:
        f.write(SOURCE)
    lib = m2v.compile_library(path, abort_checks=ABORT_CHECKS)
    rng = np.random.default_rng(int.from_bytes(os.urandom(4), "little"))

    def run_twice(stream):
        a = rng.standard_normal(1000).astype(np.float32)
        b = m2v.Buffer(a.nbytes)
        stream.set_kernel(lib["twice"])
        stream.set_buffer(stream.buffer(a), 0)
        stream.set_buffer(b, 1)
        stream.dispatch_threads((a.size, 1, 1), (64, 1, 1))
        out = stream.read(b, np.float32, a.shape)
        assert np.array_equal(out, 2 * a), "twice: wrong result"

    first_device = m2v.device_info()["description"]
    run_twice(m2v.Stream())  # the kernel object now holds a pipeline on the first device

    # The case that exceeds its budget: 1 ms.
    s = m2v.Stream(timeout_ms=1)
    assert s.timeout_ms == 1
    out = m2v.Buffer(4096 * 4)
    s.set_kernel(lib["spin"])
    s.set_buffer(out, 0)
    s.set_bytes(np.uint32(1 << 24), 1)
    s.dispatch_threads((4096, 1, 1), (64, 1, 1))
    try:
        s.synchronize()
        sys.exit("the spinning kernel finished within 1 ms: the test cannot show a timeout here")
    except m2v.TimeoutError as e:
        message = str(e)
    assert "did not finish within 1 ms" in message, message
    assert "had run for" in message, message
    print("timed out:", message)
    if ABORT_CHECKS:
        # Stopped: the same device, and the same stream, run what comes next.
        assert "its kernels were stopped" in message, message
        s.timeout_ms = 0
        run_twice(s)
        run_twice(m2v.Stream())
        assert m2v.device_info()["description"] == first_device
        print("recovered on:", first_device, "(the same device)")
        sys.stdout.flush()
        os._exit(0)
    # Later use of the faulted stream reports the fault; it does not hang.
    try:
        s.synchronize()
        s.dispatch_threads((1, 1, 1), (1, 1, 1))
        s.synchronize()
        sys.exit("a faulted stream accepted new work")
    except m2v.DeviceError:
        pass

    # The next case: a new stream on a new device, with the kernel compiled before the fault.
    fresh = m2v.Stream()
    assert fresh.timeout_ms == m2v.device_info()["timeout_ms"]
    run_twice(fresh)
    print("recovered on:", m2v.device_info()["description"], "(before:", first_device + ")")
    sys.stdout.flush()
    os._exit(0)  # the faulted device is leaked on purpose: do not run Vulkan teardown at exit
''')


@pytest.mark.parametrize("abort_checks", ["1", "0"], ids=["stopped", "without-abort-checks"])
def test_a_case_over_budget_fails_alone_and_the_next_runs(abort_checks):
    r = subprocess.run([sys.executable, "-c", CHILD, abort_checks], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert "timed out:" in r.stdout and "recovered on:" in r.stdout, r.stdout


def test_device_budget_fits_the_device():
    """The default wait budget depends on the device type: a CPU device is tens of times slower than a GPU."""
    import metal2vk as m2v

    info = m2v.device_info()
    if os.environ.get("M2V_TIMEOUT_MS"):
        assert info["timeout_ms"] == int(os.environ["M2V_TIMEOUT_MS"])
    elif info["type"] == "cpu":
        assert info["timeout_ms"] == 120000
    else:
        assert info["timeout_ms"] == 10000
    assert m2v.Stream().timeout_ms == info["timeout_ms"]
