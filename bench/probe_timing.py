"""Timing for the benchmark drivers that race variants of one kernel (bench/exp_range_probe.py,
bench/rms_output_widening.py, bench/glsl_gemv.py): metal2vk's GPU timestamps and CUDA events, each over `reps`
back-to-back launches after `warm` seconds of the same work (the H200's SM clock idles low), in µs per launch."""
import time


def time_stream(stream, launch, reps, warm=0.3):
    t = time.time()
    while time.time() - t < warm:
        for _ in range(4):
            launch()
        stream.synchronize()
    stream.take_timings()
    for _ in range(reps):
        launch()
    stream.synchronize()
    tt = stream.take_timings()
    return (tt[-1]["end_ns"] - tt[0]["start_ns"]) / reps / 1e3


def time_cuda(fn, reps, warm=0.3):
    import torch

    torch.cuda.synchronize()
    t = time.time()
    while time.time() - t < warm:
        for _ in range(4):
            fn()
        torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(reps):
        fn()
    b.record()
    torch.cuda.synchronize()
    return a.elapsed_time(b) * 1e3 / reps


def race(timers, rounds=3):
    """{name: [µs, one per round]}: each timer (a callable returning µs) once per round, in the given order and in
    reverse on alternate rounds, so that a clock drifting during the run favours none of them."""
    times = {k: [] for k in timers}
    for rnd in range(rounds):
        for k in (list(timers) if rnd % 2 == 0 else list(reversed(timers))):
            times[k].append(timers[k]())
    return times


def print_times(times, width):
    for k, v in times.items():
        print(f"{k:{width}s} " + " ".join(f"{x:7.1f}" for x in v) + f"   min {min(v):7.1f}")
