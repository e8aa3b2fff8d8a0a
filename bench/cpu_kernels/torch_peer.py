#!/usr/bin/env python3
"""The peer of bench/cpu_kernels: GACT/ActNN-style per-group quantization
and f16/bf16 casts written with PyTorch tensor ops (CPU, one thread, like
act's kernels and memcpy in act-bench-kernels), on the same tensor size.
Prints GB/s counting bytes read + written, and the ratio to torch's own
tensor copy measured in the same run.

    /usr/bin/python3 bench/cpu_kernels/torch_peer.py [--mib 256] [--runs 5]
"""

import argparse
import statistics
import time

import torch


def median_seconds(fn, runs):
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def quant_encode(x, bits, group, stochastic, gen):
    g = x.view(-1, group)
    mn = g.min(dim=1, keepdim=True).values
    mx = g.max(dim=1, keepdim=True).values
    scale = (mx - mn) / (2 ** bits - 1)
    y = (g - mn) / scale
    if stochastic:
        y = y + torch.rand(y.shape, generator=gen)
    else:
        y = y + 0.5
    q = y.floor_().clamp_(0, 2 ** bits - 1).to(torch.uint8)
    # Pack 8 / bits codes per byte, as ActNN's pack does.
    per = 8 // bits
    q = q.view(-1, per)
    packed = q[:, 0].clone()
    for lane in range(1, per):
        packed |= q[:, lane] << (lane * bits)
    return packed, torch.cat([mn, scale], dim=1)


def quant_decode(packed, meta, bits, group, n):
    per = 8 // bits
    mask = (1 << bits) - 1
    lanes = [((packed >> (lane * bits)) & mask) for lane in range(per)]
    q = torch.stack(lanes, dim=1).view(-1, group).float()
    return (meta[:, :1] + q * meta[:, 1:]).view(n)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(1)
    n = args.mib * 1024 * 1024 // 4
    x = torch.randn(n)
    y = torch.empty_like(x)
    gen = torch.Generator().manual_seed(0)
    nbytes = 4 * n
    copy = median_seconds(lambda: y.copy_(x), args.runs)
    copy_rate = 2 * nbytes / copy / 1e9
    print(f"torch {torch.__version__}, 1 thread, {n} f32 ({args.mib} MiB), "
          f"median of {args.runs} runs")
    print(f"tensor copy: {copy_rate:.2f} GB/s\n")
    print(f"{'peer':<44} {'encode':>9} {'/copy':>8} {'decode':>9} {'/copy':>8}")
    group = 256
    for bits in (1, 2, 4, 8):
        for stochastic in (True, False) if bits in (4, 8) else (True,):
            storage = n * bits // 8 + (n // group) * 8
            enc = median_seconds(
                lambda: quant_encode(x, bits, group, stochastic, gen), args.runs)
            packed, meta = quant_encode(x, bits, group, stochastic, gen)
            dec = median_seconds(
                lambda: quant_decode(packed, meta, bits, group, n), args.runs)
            er = (nbytes + storage) / enc / 1e9
            dr = (storage + nbytes) / dec / 1e9
            name = f"quant bits={bits} group=256 {'stochastic' if stochastic else 'nearest'}"
            print(f"{name:<44} {er:9.2f} {er / copy_rate:8.2f} {dr:9.2f} {dr / copy_rate:8.2f}")
    for dtype, name in ((torch.float16, "cast to f16"), (torch.bfloat16, "cast to bf16")):
        enc = median_seconds(lambda: x.to(dtype), args.runs)
        h = x.to(dtype)
        dec = median_seconds(lambda: h.float(), args.runs)
        er = (nbytes + nbytes / 2) / enc / 1e9
        dr = (nbytes / 2 + nbytes) / dec / 1e9
        print(f"{name:<44} {er:9.2f} {er / copy_rate:8.2f} {dr:9.2f} {dr / copy_rate:8.2f}")


if __name__ == "__main__":
    main()
