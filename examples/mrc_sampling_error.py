"""The sampling error of miss-ratio curves (the table in docs/mrc.md).

For 2M-access Zipf and loop traces generated with seeds 1 to 6, the largest
absolute difference between the sampled and the exact fully associative
LRU miss ratio over 12 sizes (16 KiB to 32 MiB), at rates 0.1 and 0.01.

    python examples/mrc_sampling_error.py [WORKDIR]
"""

import sys
import tempfile
from pathlib import Path

import cachesched
from cachesched import bench, trace

WORKLOADS = {
    "zipf": {"kind": "zipf", "params": {"working_set_bytes": "8MiB", "exponent": 0.8, "accesses": 2_000_000}},
    "loop": bench.workload(2_000_000),
}
SIZES = [(16 << 10) << i for i in range(12)]
RATES = (0.1, 0.01)


def main(workdir: Path) -> None:
    for name, workload in WORKLOADS.items():
        errors: dict[float, list[float]] = {rate: [] for rate in RATES}
        for seed in range(1, 7):
            path = workdir / f"{name}-{seed}.cst"
            trace.generate(workload, path, seed=seed)
            exact = cachesched.mrc(path, sizes=SIZES)
            for rate in RATES:
                sampled = cachesched.mrc(path, sizes=SIZES, sample=rate)
                errors[rate].append(round(float((sampled.miss_ratio - exact.miss_ratio).abs().max()), 4))
        for rate, values in errors.items():
            print(f"{name:<5} rate {rate:<5} largest error per seed: {values}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp))
