"""What ``explain`` shows of one query: the plan (table, method, the rule that chose it, the
requirement), its stages with their statements — every one in the target dialect, or with
``summary`` only how many per stage — and, when it ran (``analyze``), the time of each and the
report."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlanon.context import Statement
from sqlanon.finish.report import Report
from sqlanon.finish.text import requirement_text

#: said in a static explain, where the search's loop is shown once
ONE_ROUND = ("the search repeats its round of statements (per generalization level for alpha_k, per cutting pass "
             "for mondrian, per two lattice nodes and per round of joins for local, per probe of the number of classes "
             "for sabre, per group for mdav and vmdav, inside one "
             "server-side loop where the database has one); explain --analyze runs it and lists every statement")


@dataclass(frozen=True)
class Explanation:
    backend: str
    #: the method and the rule that chose it; None: the query reads no protected table
    method: str | None
    rule: str | None
    report: Report
    statements: tuple[Statement, ...]
    #: the query ran (statements timed, the report measured)
    analyzed: bool

    def stages(self) -> dict[str, int]:
        """Statements per stage, in the order the stages ran."""
        out: dict[str, int] = {}
        for s in self.statements:
            out[s.stage] = out.get(s.stage, 0) + 1
        return out

    def _head(self) -> list[str]:
        lines = [f"backend: {self.backend}"]
        if self.method is None:
            lines.append("plan: pass-through (the query reads no protected table)")
        else:
            lines.append(f"plan: {self.method}; rule: {self.rule}")
        return lines

    def text(self, summary: bool = False) -> str:
        return self._summary() if summary else self._full()

    def _full(self) -> str:
        lines = self._head()
        if self.method not in (None, "dp") and not self.analyzed:  # dp: one statement, no search
            lines.append(f"note: {ONE_ROUND}")
        stage = None
        for i, s in enumerate(self.statements, 1):
            if s.stage != stage:
                stage = s.stage
                lines.append(f"-- stage {stage}")
            t = f"  -- {s.seconds * 1000:.1f} ms" if s.seconds is not None else ""
            lines.append(f"[{i}] {s.sql};{t}")
        if self.analyzed:
            lines.append(str(self.report))
        return "\n".join(lines)

    def _summary(self) -> str:
        lines = self._head()
        if self.report.table is not None:
            lines.insert(1, f"table: {self.report.table}")
            lines.append(f"requirement {requirement_text(self.report.requirement)}")
        stages = self.stages()
        width = max([len(s) for s in stages] + [len("total")])
        if self.analyzed:
            lines.append("stages (statements, seconds):")
        else:
            lines.append("stages (statements; nothing ran" + (", the search's round is counted once" if self.method
                                                              else "") + "):")
        for name, n in stages.items():
            seconds = self.report.seconds.get(name)
            lines.append(f"  {name:<{width}}  {n:>5}" + (f"  {seconds:.3f} s" if self.analyzed and seconds is not None
                                                          else ""))
        lines.append(f"  {'total':<{width}}  {len(self.statements):>5}")
        if self.method not in (None, "dp") and not self.analyzed:  # dp: one statement, no search
            lines.append(f"note: {ONE_ROUND}")
        if self.analyzed:
            lines.append(str(self.report))
        return "\n".join(lines)

    def to_dict(self, statements: bool = True) -> dict[str, Any]:
        """The machine-readable form; ``statements=False``: counts per stage, no SQL."""
        d: dict[str, Any] = {
            "backend": self.backend, "table": self.report.table, "method": self.method, "rule": self.rule,
            "requirement": self.report.requirement, "analyzed": self.analyzed,
            "stages": [{"stage": name, "statements": n,
                        **({"seconds": self.report.seconds.get(name)} if self.analyzed else {})}
                       for name, n in self.stages().items()],
        }
        if statements:
            d["statements"] = [{"stage": s.stage, "sql": s.sql, "seconds": s.seconds} for s in self.statements]
        if self.analyzed:
            d["report"] = self.report.to_dict()
        return d
