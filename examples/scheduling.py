"""How much of the L2 and TLB misses does time-slicing 32 tasks on 8 cores cause?

Runs examples/scheduling.toml, then the same tasks with every task run to
completion on the core it starts on (no time-slicing, no migration), and
prints the difference. (Miss attribution by isolated shadows, which will
give this without a second run, is planned.)
"""

from pathlib import Path

import cachesched

config = Path(__file__).with_name("scheduling.toml")
sliced = cachesched.simulate(config, progress=True)
calm = cachesched.simulate(config, scheduler={"kind": "pinned", "params": {"quantum": "10s"}}, progress=True)

print(sliced.format())
print()
for what, column in (("L2 misses", "l2_misses"), ("L1 TLB misses", "tlb_misses"), ("page walks", "walks")):
    a, b = sliced.cores[column].sum(), calm.cores[column].sum()
    print(f"{what:<14} {a:>12,} time-sliced, {b:>12,} run to completion: "
          f"scheduling causes {100 * (a - b) / a:5.1f}%")
print(f"switches {sliced.summary['switches']:,}, migrations {sliced.summary['migrations']:,}")
w = sliced.windows
if len(w):
    whole = sliced.tasks.set_index("task").cpi[w.task].mean()
    print(f"CPI of migrated tasks in their first 100K instructions after a migration: {w.cpi.mean():.2f} "
          f"(over their whole run: {whole:.2f})")
