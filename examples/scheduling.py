"""How much of the L2 and TLB misses does time-slicing 32 tasks on 8 cores cause?

Runs examples/scheduling.toml, whose machine splits the L2's and the TLBs'
misses by cause with per-task isolated shadows (docs/attribution.md), and
prints the split: what the tasks would have missed alone (compulsory,
capacity) and what switches, migrations and sharing added.
"""

from pathlib import Path

import cachesched

r = cachesched.simulate(Path(__file__).with_name("scheduling.toml"), progress=True)
print(r.format())
print()

l2 = r.levels[r.levels.level == "l2"]
total = l2.misses.sum()
print(f"L2 misses: {total:,}")
for cause in ("compulsory", "capacity", "switch_induced", "migration_induced", "sharing_induced"):
    n = l2[cause].sum()
    print(f"  {cause:<18} {n:>12,.0f}  {100 * n / total:5.1f}%")

t = r.tasks
for level in ("l1", "l2"):
    misses = t[f"tlb_{level}_misses"].sum()
    induced = sum(t[f"tlb_{level}_{cause}_induced"].sum() for cause in ("switch", "migration", "sharing"))
    print(f"L{level[1]} TLB misses: {misses:,}, {100 * induced / misses:5.1f}% caused by scheduling")

print(f"switches {r.summary['switches']:,}, migrations {r.summary['migrations']:,}")
back = t[t.residual_returns > 0]
if len(back):
    kept = back.residual_l2_found.sum() / back.residual_l2_left.sum()
    print(f"a task back on the core it left finds {100 * kept:.0f}% of its L2 lines still there")
w = r.windows
if len(w):
    whole = t.set_index("task").cpi[w.task].mean()
    print(f"CPI of migrated tasks in their first 100K instructions after a migration: {w.cpi.mean():.2f} "
          f"(over their whole run: {whole:.2f})")
