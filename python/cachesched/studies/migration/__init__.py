"""The migration study: spec tlb-preservation-and-migration-prefetch.md
(S. Reza's dissertation, "Reducing Migration-induced Misses in an
Over-Subscribed Multiprocessor System"), run by ``cachesched study migration``.

The study has four parts (:data:`PARTS`), one module each, run in order:

- ``tlb`` (§3): TLB preservation, simple save/restore and the aging
  predictors: :mod:`.tlb`;
- ``l2`` (§4): the idealized L2 selection study: :mod:`.l2`;
- ``prefetch`` (§5): the migration prefetcher: :mod:`.prefetch`;
- ``hwpf`` (§6): the comparison with stride and stream prefetchers:
  :mod:`.hwpf`.

**Adding a part.** Write ``studies/migration/<name>.py`` with ``CLAIMS``
(its claims as ``(id, claim, spec value)``; the runner registers them) and
``run(ctx: Context) -> Section`` (:mod:`cachesched.studies.study`), which runs its simulations with
:func:`cachesched.studies.runs.run` into ``ctx.store`` (sweep names
starting ``migration-<name>``), judges each claim from its measured tables
(``ctx.claims["L1"].judge(...)``), draws its figures into ``ctx.out`` and
returns its page section with its tables. Then add it to :data:`PARTS`.
docs/studies.md has the details; :mod:`.tlb` is a worked example.
"""

from __future__ import annotations

from ..study import Part, Study

#: Suite size for the quick study and for the full one.
#: Quick uses ``small``, not ``tiny``: the tiny inputs of hmmer, gcc, gobmk and
#: h264ref are their small inputs recorded whole (10M to over 200M
#: references, many minutes of valgrind each), and the others' tiny runs are
#: mostly start-up, while small traces are 2M references of the programs'
#: steady state after a warm-up skip, recorded in under a minute each.
SIZES = {"quick": "small", "full": "full"}

PARTS = (
    Part("tlb", "§3", "TLB preservation: save/restore and aging predictors", "cachesched.studies.migration.tlb"),
    Part("l2", "§4", "Idealized L2 selection (Local/Regional/Global MRU)", "cachesched.studies.migration.l2"),
    Part("prefetch", "§5", "Migration prefetcher (live and delayed)", "cachesched.studies.migration.prefetch"),
    Part("hwpf", "§6", "Migration prefetcher versus stride and stream prefetchers",
         "cachesched.studies.migration.hwpf"),
)

STUDY = Study(name="migration", title="Migration study: TLB preservation and migration prefetching",
              spec="tlb-preservation-and-migration-prefetch.md", parts=PARTS, sizes=SIZES, takes_ref=True)
run = STUDY.run
