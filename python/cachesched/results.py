"""The results of one simulation, as JSON, pandas tables and Arrow tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from ._files import write_bytes, write_text
from .errors import ResultsError

KINDS = ("load", "store", "ifetch")
REQ_KINDS = ("load", "store", "ifetch", "writeback", "walk", "prefetch")
LEVELS = ("l1i", "l1d", "l2", "llc")


COUNTS = ("accesses", "instructions", "stall_cycles", "overhead_cycles", "tlb_misses", "walks")
EVENT_COLUMNS = ["time", "core", "task", "event", "from", "to", "locality", "timing"]


BLOCK_SERIES_COLUMNS = ["time_s", "vm", "alloc", "used", "requests", "misses", "borrowed", "released"]


def block_vms(rows: list[dict]) -> pd.DataFrame:
    """A block cache's VMs (one row each, as the core gives them), with
    ``miss_pct``: misses per block requested, in percent."""
    vms = pd.DataFrame(rows, columns=None if rows else ["vm", "trace", "requests", "blocks", "hits", "misses"])
    return vms.assign(miss_pct=100 * vms.misses / vms.blocks.where(vms.blocks > 0),
                      full_at_s=vms.get("full_at_s", pd.Series(dtype=float)).astype(float))


class Results:
    """What a run reports.

    ``summary`` and ``config`` are plain dicts; :attr:`tasks`, :attr:`cores`,
    :attr:`levels`, :attr:`intervals`, :attr:`windows`, :attr:`slices`, :attr:`events`,
    :attr:`caches`, :attr:`tlbs`, :attr:`memory` and :attr:`mechanisms` are
    pandas DataFrames;
    :meth:`to_json`, :meth:`to_arrow` and :meth:`save` export them.
    """

    def __init__(self, data: dict[str, Any]):
        self._data = data

    @classmethod
    def from_json(cls, text: str) -> "Results":
        """Results from the JSON text the core (or :meth:`to_json`) produced."""
        return cls(json.loads(text))

    @classmethod
    def read(cls, path: str | Path) -> "Results":
        """The results :meth:`save` wrote: ``path`` is the folder or its
        ``results.json``; the ``host.json`` beside it, if any, gives
        :attr:`host`. A file that is not such a document (damaged, cut
        short) is a :class:`~cachesched.errors.ResultsError` naming it."""
        path = Path(path)
        path = path / "results.json" if path.is_dir() else path
        try:
            data = json.loads(path.read_bytes())
            if not isinstance(data, dict) or not {"version", "config", "summary", "tasks"} <= data.keys():
                raise ValueError("it lacks the version, config, summary or tasks of a run's results")
        except (OSError, ValueError) as e:
            raise ResultsError(f"{path}: not a run's results ({e}); run it again") from None
        host = path.with_name("host.json")
        if host.is_file():
            try:
                data["host"] = json.loads(host.read_bytes())
            except ValueError:
                pass  # host timings are a nicety; the results stand without them
        return cls(data)

    @property
    def raw(self) -> dict[str, Any]:
        """The whole document, as the core produced it."""
        return self._data

    @property
    def summary(self) -> dict[str, Any]:
        """Run-wide totals: accesses, instructions, cycles, cpi, switches, ..."""
        return self._data["summary"]

    @property
    def host(self) -> dict[str, Any]:
        """How the host ran it: ``wall_seconds``, ``accesses_per_second``, and
        ``threads``, how the caches used host threads (split by set over two,
        or one and why; see ``run.split_sets``) (empty for results read back
        from a ``results.json``). The only part
        of a run that is not a function of its configuration and seed, so it
        is kept out of :meth:`to_json` and saved apart, in ``host.json``."""
        return self._data.get("host", {})

    @property
    def config(self) -> dict[str, Any]:
        """The resolved configuration the run used."""
        return self._data["config"]

    @property
    def version(self) -> str:
        """The cachesched version that produced these results."""
        return self._data["version"]

    def _machine_levels(self) -> list[str]:
        present = {c["level"] for c in self._data["caches"]}
        return [lv for lv in LEVELS if lv in present]

    def _counts(self, row: dict[str, Any]) -> dict[str, Any]:
        """The counters of a stretch (core, interval, window) as flat columns,
        with misses and MPKI per level of the machine."""
        out = {k: row[k] for k in COUNTS}
        kilo = row["instructions"] / 1000 if row["instructions"] else float("nan")
        for lv in self._machine_levels():
            out[f"{lv}_misses"] = row["misses"][lv]
            out[f"{lv}_mpki"] = row["misses"][lv] / kilo
        out["tlb_mpki"] = row["tlb_misses"] / kilo
        return out

    def _stretches(self, table: str, fields: dict[str, str]) -> pd.DataFrame:
        """A table of stretches (``cores``, ``intervals``, ``windows``): the
        ``fields`` (column name: JSON key) of each row, then its counters."""
        rows = [{**{col: r[key] for col, key in fields.items()}, **self._counts(r)} for r in self._data.get(table, [])]
        return pd.DataFrame(rows)

    @property
    def tasks(self) -> pd.DataFrame:
        """One row per task: address space, VM, instructions, cycles, CPI,
        stalls, scheduling overhead, switches, migrations, MPKI per level,
        TLB and memory counters (with TLB misses induced by scheduling, by
        cause), and the residual lines: on its returns to the core it last
        left, its lines there when it left and when it came back."""
        rows = []
        for t in self._data["tasks"]:
            row = {k: t[k] for k in ("task", "name", "asid", "vm", "accesses", "instructions", "cycles", "cpi",
                                     "stall_cycles", "overhead_cycles", "switches", "migrations_local",
                                     "migrations_remote", "memory_local", "memory_remote")}
            row.update({f"{lv}_mpki": t["mpki"][lv] for lv in self._machine_levels()})
            row["tlb_mpki"] = t["mpki"]["tlb"]
            for k, v in t["tlb"].items():
                if isinstance(v, dict):  # misses induced by scheduling, by cause (all kinds)
                    row.update({f"tlb_{k.removesuffix('_induced')}_{cause}_induced": sum(n) for cause, n in v.items()})
                else:
                    row[f"tlb_{k}"] = v
            residual = t["residual"]
            row["residual_returns"] = residual["returns"]
            for lv in self._machine_levels():
                row[f"residual_{lv}_left"] = residual["left"][lv]
                row[f"residual_{lv}_found"] = residual["found"][lv]
            rows.append(row)
        df = pd.DataFrame(rows)
        if len(df):
            df["vm"] = df["vm"].astype("Int64")
        return df

    @property
    def cores(self) -> pd.DataFrame:
        """One row per core: its clock's cycles since warm-up, idle cycles,
        CPI while running, switches, migrations in, and what its tasks did on
        it (misses and MPKI per level)."""
        keys = ("core", "socket", "cycles", "idle_cycles", "cpi", "switches", "migrations_in")
        return self._stretches("cores", {k: k for k in keys})

    @property
    def intervals(self) -> pd.DataFrame:
        """The time series: one row per task and ``stats.interval`` of its
        instructions (clock at start and end, core at the end, cycles, CPI,
        misses and MPKI per level). Empty unless ``stats.interval`` is set."""
        return self._stretches("intervals", {k: k for k in ("task", "index", "start", "end", "core", "cycles", "cpi")})

    @property
    def windows(self) -> pd.DataFrame:
        """One row per migration: the task's first ``stats.window``
        instructions on the new core (``complete`` is false when it migrated
        again, finished or the run ended first). Empty unless
        ``stats.window`` is set."""
        keys = ("task", "start", "from", "to", "locality", "timing", "complete", "cycles", "cpi")
        renamed = {"from": "from_core", "to": "to_core"}
        return self._stretches("windows", {renamed.get(k, k): k for k in keys})

    @property
    def slices(self) -> pd.DataFrame:
        """One row per schedule of a task (switch-in to switch-out, in the
        order they ended; ``stats.slices``): task, core, ``start``/``end``
        (the core's clock), ``length`` (cycles), ``gap`` (cycles since the
        task's previous switch-out: the latency a co-runner sees; NaN for its
        first schedule), instructions, LLC misses and the switch-induced ones
        (the cost of the switch *before* it; 0 unless ``llc`` is attributed),
        the LLC residual lines it left on this core and found again (NaN when
        it last ran elsewhere), and the switch-miss estimate a
        ``cs-estimator`` published at its end (``estimate``, the halves
        ``c1``/``c2``, the full-directory count ``full``, ``reliable``; NaN
        without one). See ``docs/elastic-time-slicing.md``."""
        columns = ["task", "core", "start", "end", "instructions", "llc_misses", "llc_switch_misses",
                   "residual_left", "residual_found", "estimate", "c1", "c2", "full", "reliable"]
        df = pd.DataFrame(self._data.get("slices", []), columns=columns)
        for col in ("residual_left", "residual_found", "estimate", "c1", "c2", "full"):
            df[col] = df[col].astype("Int64")
        df["reliable"] = df["reliable"].astype("boolean")
        df.insert(4, "length", df["end"] - df["start"])
        previous_end = df.sort_values(["task", "start"]).groupby("task")["end"].shift()
        df.insert(5, "gap", df["start"] - previous_end)
        return df

    @property
    def events(self) -> pd.DataFrame:
        """The event log: time (the core's clock), core, task, event
        (``switch_in``, ``switch_out``, ``migrate``, ``tick``), and for
        migrations from/to core, locality (local/remote) and timing
        (live/delayed)."""
        df = pd.DataFrame(self._data.get("events", []), columns=EVENT_COLUMNS)
        df = df.rename(columns={"from": "from_core", "to": "to_core"})
        for col in ("core", "task", "from_core", "to_core"):
            df[col] = df[col].astype("Int64")
        return df

    @property
    def levels(self) -> pd.DataFrame:
        """One row per task, cache level and access kind, with hits, misses,
        miss ratio, misses per kilo-instruction, and the misses by cause:
        compulsory, switch-, migration- and sharing-induced, and
        capacity/conflict (the rest; NaN for levels not in
        ``machine.attribution``, whose induced misses are not told apart)."""
        attributed = set(self.config["machine"].get("attribution", []))
        rows = []
        for t in self._data["tasks"]:
            kilo = t["instructions"] / 1000 if t["instructions"] else float("nan")
            for lv in self._machine_levels():
                counters = t["levels"][LEVELS.index(lv)]
                for k, kind in enumerate(KINDS):
                    hits, misses = counters["hits"][k], counters["misses"][k]
                    if hits + misses == 0:
                        continue
                    induced = {f"{cause}_induced": n[k] for cause, n in counters["induced"].items()}
                    other = misses - counters["compulsory"][k] - sum(induced.values())
                    rows.append({
                        "task": t["task"], "level": lv, "kind": kind, "accesses": hits + misses,
                        "hits": hits, "misses": misses, "miss_ratio": misses / (hits + misses),
                        "mpki": misses / kilo, "compulsory": counters["compulsory"][k], **induced,
                        "capacity": other if lv in attributed else float("nan"),
                    })
        return pd.DataFrame(rows, columns=["task", "level", "kind", "accesses", "hits", "misses", "miss_ratio", "mpki",
                                           "compulsory", "switch_induced", "migration_induced", "sharing_induced",
                                           "capacity"])

    def miss_ratio(self, level: str, task: int | None = None) -> float:
        """Demand miss ratio of ``level`` (over all tasks unless ``task`` is given)."""
        df = self.levels
        df = df[df.level == level]
        if task is not None:
            df = df[df.task == task]
        total = df.accesses.sum()
        return float(df.misses.sum() / total) if total else float("nan")

    @property
    def caches(self) -> pd.DataFrame:
        """One row per cache instance: hits, misses and compulsory misses by
        request kind, fills, evictions, write-backs, back-invalidations, and
        for a cache with a prefetcher the prefetched lines used and unused
        (``prefetch_misses`` are the prefetches it issued, ``prefetch_hits``
        the proposals it dropped because the line was there), and the lines
        migration mechanisms placed, dropped as present, used and unused."""
        rows = []
        for c in self._data["caches"]:
            row = {"path": c["path"], "level": c["level"]}
            for i, kind in enumerate(REQ_KINDS):
                row[f"{kind}_hits"] = c["hits"][i]
                row[f"{kind}_misses"] = c["misses"][i]
                row[f"{kind}_compulsory"] = c["compulsory"][i]
            for key in ("fills", "evictions", "dirty_evictions", "back_invalidations", "bypasses", "flushed",
                        "coherence_invalidations", "coherence_cleans", "prefetch_useful", "prefetch_unused",
                        "migrated_in", "migrated_dropped", "migrated_useful",
                        "migrated_unused"):
                row[key] = c[key]
            rows.append(row)
        return pd.DataFrame(rows)

    @property
    def tlbs(self) -> pd.DataFrame:
        """One row per TLB instance."""
        return pd.DataFrame(self._data["tlbs"], columns=["path", "hits", "misses", "evictions", "flushed"])

    @property
    def memory(self) -> pd.DataFrame:
        """One row per NUMA node: lines read and written back (``remote_*``:
        those by other nodes' cores and caches), frames allocated."""
        return pd.DataFrame(self._data["memory"],
                            columns=["node", "reads", "writes", "pages", "remote_reads", "remote_writes"])

    @property
    def traffic(self) -> pd.DataFrame:
        """One row per requesting core and home node: the interconnect
        transactions of a run whose threads share an address space under
        coherence (``read_shared``, ``read_own``, ``upgrade``, ``writeback``,
        and ``cache_to_cache``, the reads and read-to-owns another cache
        served; ``sampled``, those the interconnect sampler recorded; see
        docs/numa.md). Empty for other runs."""
        return pd.DataFrame(self._data.get("traffic", []),
                            columns=["core", "node", "read_shared", "read_own", "upgrade", "writeback",
                                     "cache_to_cache", "sampled"])

    @property
    def pages(self) -> pd.DataFrame:
        """With ``stats.pages`` and a ``machine.sampler``: one row per page
        and requesting node with samples (``asid``, ``vpn``, ``home``: its
        node at the end, ``node``, ``samples``); a page-migration pass takes
        the samples it reads, so those left are the last interval's."""
        return pd.DataFrame(self._data.get("pages", []), columns=["asid", "vpn", "home", "node", "samples"])

    @property
    def regions(self) -> pd.DataFrame:
        """With a ``region-scheduling`` mechanism: one row per region at the
        end of the run (``asid``, ``region``: its founding page, ``kind``:
        ``given``, ``seed``, ``regular`` or ``global``, ``cache``: the cache
        domain it is mapped to, ``pages``, ``working_set``: its estimate in
        pages); see docs/region-scheduling.md."""
        return pd.DataFrame(self._data.get("regions", []),
                            columns=["asid", "region", "kind", "cache", "pages", "working_set"])

    @property
    def series(self) -> pd.DataFrame:
        """The mechanisms' time series: one row per point (``mechanism``:
        its position in ``mechanisms``, ``asid``, ``time`` on the
        mechanism's clock, ``name``, ``key``: what of, ``value``). Region
        scheduling with ``regioning.series`` records its phases and scans
        (docs/region-scheduling.md, "Time series")."""
        return pd.DataFrame(self._data.get("series", []),
                            columns=["mechanism", "asid", "time", "name", "key", "value"])

    @property
    def requests(self) -> pd.DataFrame:
        """With server tasks (``requests`` in ``[[tasks]]``): one row per
        request that ended (``task``, ``request``, and ``arrival``,
        ``start``, ``end`` in core cycles; ``response``: ``end - arrival``,
        ``wait``: ``start - arrival``); see docs/config.md."""
        df = pd.DataFrame(self._data.get("requests", []), columns=["task", "request", "arrival", "start", "end"])
        return df.assign(response=df.end - df.arrival, wait=df.start - df.arrival)

    @property
    def block_vms(self) -> pd.DataFrame:
        """With a ``[block_cache]``: one row per VM, a task with ``io``
        (``vm``, ``task``, ``trace``, ``requests``, ``blocks``, ``hits``,
        ``misses``, ``miss_pct``, ``completion_s``: from its first request
        to its last one's end, ``mean_response_ms``, ``p95_response_ms``,
        ``full_at_s``, ``first_alloc``, ``peak_alloc``, ``final_alloc``
        in blocks, ``replacement_flags``); see docs/cache-locking.md."""
        return block_vms((self._data.get("block_cache") or {}).get("vms", []))

    @property
    def block_series(self) -> pd.DataFrame:
        """With a ``[block_cache]``: one row per VM at the end of each
        provisioning interval (``time_s``, ``vm``, ``alloc``, ``used`` in
        blocks, ``requests``, ``misses``, ``borrowed``, ``released``)."""
        return pd.DataFrame((self._data.get("block_cache") or {}).get("series", []), columns=BLOCK_SERIES_COLUMNS)

    @property
    def mechanisms(self) -> pd.DataFrame:
        """One row per mechanism of the run (``mechanisms`` in the config, in
        order): ``index``, ``kind`` and its counters, one column each (NaN
        where a kind has no such counter). See ``docs/mechanisms.md``."""
        rows = [{"index": m["index"], "kind": m["kind"], **(m["stats"] or {})}
                for m in self._data.get("mechanisms", [])]
        return pd.DataFrame(rows, columns=None if rows else ["index", "kind"])

    def metrics(self) -> dict[str, Any]:
        """What a results store's ledger keeps of a run: the summary and the
        host's timings, plus the miss ratio and MPKI of each cache level."""
        out = {**self.summary, **self.host}
        instructions = out.get("instructions") or 0
        for level, part in self.levels.groupby("level", sort=False):
            accesses, misses = int(part.accesses.sum()), int(part.misses.sum())
            out[f"{level}_miss_ratio"] = misses / accesses if accesses else None
            out[f"{level}_mpki"] = 1000 * misses / instructions if instructions else None
        return out

    def tables(self) -> dict[str, pd.DataFrame]:
        """Every table by name (``mechanisms`` only when the run had some)."""
        tables = {"tasks": self.tasks, "cores": self.cores, "levels": self.levels, "intervals": self.intervals,
                  "windows": self.windows, "slices": self.slices, "events": self.events, "caches": self.caches, "tlbs": self.tlbs,
                  "memory": self.memory}
        if self._data.get("traffic"):
            tables["traffic"] = self.traffic
        if self._data.get("pages"):
            tables["pages"] = self.pages
        if self._data.get("mechanisms"):
            tables["mechanisms"] = self.mechanisms
        if self._data.get("regions"):
            tables["regions"] = self.regions
        if self._data.get("requests"):
            tables["requests"] = self.requests
        if self._data.get("series"):
            tables["series"] = self.series
        if self._data.get("block_cache"):
            tables["block_vms"], tables["block_series"] = self.block_vms, self.block_series
        return tables

    def to_arrow(self) -> dict[str, "pyarrow.Table"]:  # noqa: F821
        """Every table as a pyarrow Table."""
        import pyarrow as pa

        return {name: pa.Table.from_pandas(df, preserve_index=False) for name, df in self.tables().items()}

    def to_json(self, path: str | Path | None = None, indent: int | None = 2) -> str:
        """The document as JSON text, without the :attr:`host` timings, so
        that two runs of one configuration and seed give the same text;
        written to ``path`` if given."""
        text = json.dumps({k: v for k, v in self._data.items() if k != "host"}, indent=indent)
        if path is not None:
            write_text(path, text + "\n")
        return text

    def files(self) -> dict[str, bytes]:
        """What :meth:`save` writes, as file names and bytes (a sweep's workers
        send these to the driver, which needs no disk shared with them)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        out = {"results.json": (self.to_json() + "\n").encode()}
        if self.host:
            out["host.json"] = (json.dumps(self.host, indent=2) + "\n").encode()
        for name, table in self.to_arrow().items():
            sink = pa.BufferOutputStream()
            pq.write_table(table, sink)
            out[f"{name}.parquet"] = sink.getvalue().to_pybytes()
        return out

    def save(self, directory: str | Path) -> Path:
        """Write ``results.json``, ``host.json`` and one Parquet file per table
        into ``directory``, each whole or not at all."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        for name, data in self.files().items():
            write_bytes(out / name, data)
        return out

    def format(self) -> str:
        """A human-readable report: totals, demand misses per level, and the
        attributed levels' misses by cause."""
        s = self.summary
        lines = [
            f"accesses      {s['accesses']:>16,}",
            f"instructions  {s['instructions']:>16,}",
            f"cycles        {s['cycles']:>16,}",
            f"CPI           {s['cpi']:>16.4f}",
            *([f"tasks         {s['tasks']:>16,}", f"switches      {s['switches']:>16,}",
               f"migrations    {s['migrations']:>16,}"] if s.get("tasks", 1) > 1 else []),
            *([f"simulated in  {self.host['wall_seconds']:>15.2f}s "
               f"({self.host['accesses_per_second'] / 1e6:,.1f} M accesses/s)"] if self.host else []),
            "",
            f"{'level':<6}{'accesses':>14}{'misses':>14}{'miss ratio':>12}{'MPKI':>10}{'compulsory':>12}",
        ]
        df = self.levels
        for lv in self._machine_levels():
            part = df[df.level == lv]
            acc, miss = int(part.accesses.sum()), int(part.misses.sum())
            instr = s["instructions"] or 1
            ratio = miss / acc if acc else 0.0
            lines.append(f"{lv:<6}{acc:>14,}{miss:>14,}{ratio:>12.4f}{1000 * miss / instr:>10.3f}"
                         f"{int(part.compulsory.sum()):>12,}")
        t = self.tasks
        if len(t) and "tlb_l1_hits" in t:
            l1 = int(t.tlb_l1_hits.sum() + t.tlb_l1_misses.sum())
            if l1:
                lines += ["", f"TLB: {int(t.tlb_l1_misses.sum()):,} L1 misses of {l1:,} translations, "
                              f"{int(t.tlb_walks.sum()):,} page walks ({int(t.tlb_walk_cycles.sum()):,} cycles)"]
        lines += self._format_causes(df)
        for m in self._data.get("mechanisms", []):
            counters = ", ".join(f"{k} {v:,}" for k, v in (m["stats"] or {}).items())
            lines += ["", f"mechanism {m['index']} ({m['kind']}): {counters}"]
        return "\n".join(lines)

    def _format_causes(self, df: pd.DataFrame) -> list[str]:
        """The misses of the attributed cache and TLB levels by cause, as
        shares. TLB shadows tell the induced misses only: a TLB level's
        compulsory and capacity misses are shown together, under capacity."""
        wanted = self.config["machine"].get("attribution", [])
        attributed = [lv for lv in self._machine_levels() if lv in wanted]
        tlbs = [lv for lv in ("tlb.l1", "tlb.l2") if lv in wanted]
        causes = ["compulsory", "capacity", "switch_induced", "migration_induced", "sharing_induced"]
        if not attributed and not tlbs:
            return []
        lines = ["", "misses by cause " + "".join(f"{c.removesuffix('_induced'):>12}" for c in causes)]
        for lv in attributed:
            part = df[df.level == lv]
            total = part.misses.sum()
            shares = "".join(f"{100 * part[c].sum() / total if total else 0.0:>11.1f}%" for c in causes)
            lines.append(f"{lv:<16}{shares}")
        tasks = self.tasks
        for lv in tlbs:
            level = lv.removeprefix("tlb.")
            total = tasks[f"tlb_{level}_misses"].sum()
            induced = [tasks[f"tlb_{level}_{c}"].sum() for c in causes[2:]]
            rest = total - sum(induced)
            share = lambda n: f"{100 * n / total if total else 0.0:>11.1f}%"  # noqa: E731
            lines.append(f"{lv:<16}{'-':>12}{share(rest)}" + "".join(share(n) for n in induced))
        if tlbs:
            lines.append("(TLB levels: compulsory and capacity misses together, under capacity)")
        return lines

    def __repr__(self) -> str:
        s = self.summary
        return f"<Results accesses={s['accesses']} cpi={s['cpi']:.4f}>"


def __getattr__(name: str) -> object:
    """``cachesched.results.load``, the documented path of
    :func:`cachesched.store.load`, resolved on first use: the store reads
    run results, so this module does not import it."""
    if name == "load":
        from .store import load

        return load
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
