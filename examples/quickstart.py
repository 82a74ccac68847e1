"""The Python API in ten lines: run, look at the tables, change a key, compare."""

import cachesched

workload = {"kind": "zipf", "params": {"working_set_bytes": "16MiB", "exponent": 1.2, "accesses": 2_000_000}}
base = cachesched.simulate({"machine": {"preset": "standard"}, "workload": workload}, progress=True)
print(base.format())
print(base.levels)  # one row per task, level and access kind

bigger = cachesched.simulate({"machine": {"preset": "standard", "l2": {"size_bytes": "2MiB"}}, "workload": workload})
print(f"L2 miss ratio {base.miss_ratio('l2'):.3f} -> {bigger.miss_ratio('l2'):.3f} with a 2 MiB L2")
print(f"CPI {base.summary['cpi']:.3f} -> {bigger.summary['cpi']:.3f}")
