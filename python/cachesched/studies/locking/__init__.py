"""The cache locking study: spec cache-locking.md (Suryanarayana's
hypervisor cache locking), run by ``cachesched study locking``.

Its parts (:data:`PARTS`), one module each, run in order:

- ``table1`` (A1, Table 1): the 2 KB, 128 B, 8-way example's arithmetic,
  and the same count on our FFT's instruction fetches;
- ``cl1`` (A2-A4, Figs. 10-11): level-1 locking in a 4-core processor,
  random locking swept, the I1's size, the three strategies;
- ``size`` (B2.1, B2.3; Tables 4, 5): miss ratio against partition size,
  with and without locking and the victim buffer;
- ``assoc`` (B2.2, B2.4; Table 6): miss ratio against associativity at
  4 KiB;
- ``response`` (B2.5): the total I/O response time of the misses;
- ``lockpct`` (B2.6): hit ratio against the share locked, 5-30%;
- ``replacement`` (B2.7): probability-based replacement against LRU;
- ``policies`` (beyond the seed): libCacheSim's LRU, ARC, S3-FIFO and
  LIRS beside the dissertation's partitions;
- ``provisioning`` (B1): three recorded servers sharing one cache, the
  equal split against the thin-provisioning rules and MRC-sized shares.

What they share (the workloads, the defaults, the stored runs) is in
:mod:`.common`. See docs/cache-locking.md, "The study".
"""

from __future__ import annotations

from ..study import Part, Study
from .common import notes

PARTS = (
    Part("table1", "A1", "Table 1's arithmetic", "cachesched.studies.locking.table1"),
    Part("cl1", "A2-A4", "Level-1 locking in a multicore", "cachesched.studies.locking.cl1"),
    Part("size", "B2.1, B2.3", "Partition size", "cachesched.studies.locking.size"),
    Part("assoc", "B2.2, B2.4", "Associativity", "cachesched.studies.locking.assoc"),
    Part("response", "B2.5", "I/O response time", "cachesched.studies.locking.response"),
    Part("lockpct", "B2.6", "The share locked", "cachesched.studies.locking.lockpct"),
    Part("replacement", "B2.7", "Probability-based replacement", "cachesched.studies.locking.replacement"),
    Part("policies", "beyond", "Modern block-cache policies", "cachesched.studies.locking.policies"),
    Part("provisioning", "B1", "Thin provisioning", "cachesched.studies.locking.provisioning"),
)

STUDY = Study(name="locking", title="Cache locking: the study", spec="cache-locking.md", parts=PARTS,
              sizes={"quick": "small", "full": "full"}, notes=notes)
run = STUDY.run
