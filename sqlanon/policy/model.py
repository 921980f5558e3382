"""What a policy says, kept apart from how it is read.

A table definition (which columns are identifiers, quasi-identifiers, sensitive, insensitive)
is separate from the privacy requirement (what must hold for every release of that table).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlanon.hierarchy.base import Hierarchy

#: methods a policy may name; ``auto`` lets the planner choose among those that exist
METHODS = ("auto", "alpha_k", "mondrian", "local", "sabre", "mdav", "vmdav", "slicing", "global", "dp")
#: what ``method: global`` minimizes (anonymize/global_recoding.py)
METRICS = ("loss", "kl", "discernibility", "entropy")
#: methods that release numeric quasi-identifiers as numbers (group means), not as labels
MICROAGGREGATION = ("mdav", "vmdav")


@dataclass(frozen=True)
class QuasiIdentifier:
    column: str
    hierarchy: "Hierarchy"


@dataclass(frozen=True)
class Sensitive:
    column: str
    kind: str  # categorical | numeric
    #: the attribute's taxonomy, for t-closeness's hierarchical distance
    hierarchy: "Hierarchy | None" = None


@dataclass(frozen=True)
class Alpha:
    """α-deassociation (Wong et al. 2009; John's thesis, Def. 3.2): no protected value above α per class."""

    value: float
    attribute: str
    #: protected values, or None for every value of the attribute
    protect: tuple[Any, ...] | None


@dataclass(frozen=True)
class Diversity:
    """l-diversity of one sensitive attribute in every class (Machanavajjhala et al. 2007, seed
    000): at least l distinct values, an entropy of at least log l, or recursive (c,l)."""

    value: int
    attribute: str
    variant: str  # distinct | entropy | recursive
    c: float | None = None


@dataclass(frozen=True)
class Closeness:
    """t-closeness (Li et al. 2007): the Earth Mover's Distance between each class's
    distribution of the attribute and the whole release's is at most t."""

    value: float
    attribute: str
    distance: str  # ordered | equal | hierarchical
    #: the attribute's taxonomy (ARX format) for the hierarchical distance
    hierarchy: "Hierarchy | None" = None


@dataclass(frozen=True)
class Persons:
    """Every class holds at least k distinct persons, each recognised by the values of
    ``attribute``: a joined release repeats one person's row once per match, so counting rows
    would let one person with many matches form a class alone (analyze/linked.py)."""

    value: int
    attribute: str


@dataclass(frozen=True)
class Slicing:
    """How slicing splits a selection (Li et al. 2012): column groups, buckets, permutation."""

    #: the column groups; None: grouped by association (Cramér's V of each pair, in SQL)
    columns: tuple[tuple[str, ...], ...] | None = None
    #: two attributes whose Cramér's V reaches this stay in one group
    threshold: float = 0.3
    #: a quasi-identifier whose values are the buckets; None: runs of the QI order, sized by search
    buckets_by: str | None = None
    #: a fixed seed makes the permutation reproducible — and invertible by whoever knows it and
    #: the data: for tests only; None: the database's RAND()
    seed: int | None = None


@dataclass(frozen=True)
class Budget:
    """How much ε a table's aggregates may spend (``privacy.epsilon``)."""

    #: ε of one query, split over its aggregates and its keys' threshold
    per_query: float
    #: ε that may be spent within ``window``, by each client (``per: client``) or by all of
    #: them together (``per: table``); never left out: answers without a budget average away
    budget: float
    per: str  # client | table
    #: seconds over which spends add up
    window: int


@dataclass(frozen=True)
class Differential:
    """Differentially private answers to aggregate queries (Dwork, McSherry, Nissim & Smith
    2006; John's thesis, §2.5): noise calibrated to what one person can change (sqlanon/dp/)."""

    epsilon: Budget
    #: for the threshold that releases GROUP BY keys that are not public; None: only public keys
    delta: float | None = None
    #: rows of one person (``person:``) an aggregate reads at most; 1 without ``person``
    rows_per_person: int = 1
    #: column → (lowest, highest): values are clamped into it before SUM and AVG
    bounds: tuple[tuple[str, float, float], ...] = ()
    #: column → every value of its public domain: such keys are released without a threshold
    public: tuple[tuple[str, tuple[Any, ...]], ...] = ()

    def bound(self, column: str) -> tuple[float, float] | None:
        return next(((lo, hi) for c, lo, hi in self.bounds if c == column), None)

    def domain(self, column: str) -> tuple[Any, ...] | None:
        return next((values for c, values in self.public if c == column), None)


@dataclass(frozen=True)
class Requirement:
    k: int = 2
    alpha: Alpha | None = None
    l: Diversity | None = None  # noqa: E741 - the model's own name
    t: Closeness | None = None
    #: set by the flow for a join of protected tables, never by a policy
    persons: tuple[Persons, ...] = ()
    max_suppression: float = 0.05
    method: str = "auto"
    slicing: Slicing = field(default_factory=Slicing)
    #: the decision algorithm's bound on "few rows" (John's thesis, Figure 23)
    few_rows: int = 10_000
    #: a query must select at least this many rows (differencing by narrow WHERE
    #: clauses); an empty selection is refused too, lest refusal and emptiness tell apart
    min_rows: int = 0
    #: seconds during which a new selection is compared with earlier releases of the table (in
    #: the catalog): one that differs from an earlier one in fewer than max(k, min_rows) rows is
    #: refused, lest the difference of two answers describe those rows; 0: off
    difference_window: int = 86_400
    #: a stored release whose rows were released before under another generalization:
    #: ``reuse`` the earlier generalization (consistent recoding), ``refuse`` the release, or
    #: ``off`` (no memory of rows: complementary and temporal attacks are not defended)
    across_releases: str = "reuse"
    #: where a WHERE condition over a sensitive attribute runs: ``released`` (after
    #: anonymization, on the released values: the refusals and the method's choices never
    #: depend on a sensitive value the answer does not show) or ``stored`` (in the pushdown,
    #: on the stored rows: the policy accepts that oracle)
    sensitive_predicates: str = "released"
    #: one generalization per column for the whole release (full-domain recoding): ``auto``
    #: then chooses ``global``
    consistent: bool = False
    #: the information loss ``global`` minimizes: ARX's ``loss`` (default), ``kl``,
    #: ``discernibility`` or non-uniform ``entropy``
    metric: str = "loss"
    #: rounds of the k-means refinement of MDAV's groups (``refine: kmeans``, kAnonyMeans;
    #: anonymize/mdav.py); 0: MDAV's groups as they are
    refine: int = 0
    #: differential privacy for aggregate queries (``privacy.epsilon``); None: not asked
    dp: Differential | None = None

    def tightened(self, o: "Overrides", sensitive: tuple["Sensitive", ...] = ()) -> "Requirement":
        """Overrides from a caller may only make the requirement stricter (or name another
        method: verification judges every release the same). A model the policy does not ask
        for judges the table's first sensitive attribute."""
        from sqlanon.errors import PolicyError

        new = self
        if o.k is not None:
            if o.k < self.k:
                raise PolicyError(f"k={o.k} is weaker than the policy's k={self.k}")
            new = replace(new, k=o.k)
        if o.alpha is not None:
            if self.alpha is None:
                raise PolicyError("alpha given but the policy names no α-protected attribute")
            if not 0 < o.alpha <= 1:
                raise PolicyError(f"alpha={o.alpha} is out of range: α is the largest share of a value in a class, "
                                  "in (0, 1]")
            if o.alpha > self.alpha.value:
                raise PolicyError(f"alpha={o.alpha} is weaker than the policy's {self.alpha.value}")
            new = replace(new, alpha=replace(self.alpha, value=o.alpha))
        if o.l is not None:
            if self.l is not None:
                if o.l < self.l.value:
                    raise PolicyError(f"l={o.l} is weaker than the policy's l={self.l.value}")
                new = replace(new, l=replace(self.l, value=o.l))
            else:
                if o.l < 2 or not sensitive:
                    raise PolicyError("l needs a value of at least 2 and a sensitive attribute in the policy")
                new = replace(new, l=Diversity(o.l, sensitive[0].column, "distinct"))
        if o.t is not None:
            if self.t is not None:
                if not 0 < o.t <= 1:
                    raise PolicyError(f"t={o.t} is out of range: t is a distance between distributions, in (0, 1]")
                if o.t > self.t.value:
                    raise PolicyError(f"t={o.t} is weaker than the policy's t={self.t.value}")
                new = replace(new, t=replace(self.t, value=o.t))
            else:
                if not 0 < o.t <= 1 or not sensitive:
                    raise PolicyError("t needs a value in (0, 1] and a sensitive attribute in the policy")
                s = sensitive[0]
                new = replace(new, t=Closeness(o.t, s.column, "ordered" if s.kind == "numeric" else "equal"))
        if o.method is not None:
            if o.method not in METHODS:
                raise PolicyError(f"method {o.method!r} is not available (one of {', '.join(METHODS)})")
            if o.method == "dp" and self.dp is None:
                raise PolicyError("method dp needs privacy.epsilon (with its budget) in the policy")
            new = replace(new, method=o.method)
        return new


@dataclass(frozen=True)
class Overrides:
    """What a caller asks beyond the policy for one query or release (``--k``, ``--l``, …)."""

    k: int | None = None
    alpha: float | None = None
    l: int | None = None  # noqa: E741 - the model's own name
    t: float | None = None
    method: str | None = None
    #: the report shows the released rows' re-identification risk (``--risk``), whatever the
    #: policy's ``report.risk``; ``population``: the policy's ``report.population`` for this run
    risk: bool = False
    population: int | str | None = None


@dataclass(frozen=True)
class ReportOptions:
    """What a release's report adds to the measures every report has (``report:`` of a table)."""

    #: the re-identification risk of the released rows (prosecutor, journalist, marketer, sample
    #: uniques; risk/headline.py): functions of the released classes' sizes, nothing more
    risk: bool = False
    #: the population the released rows are a sample of (a size or an ARX region, as ``sqlanon
    #: risk --population`` takes it), for the estimate of population uniqueness; None: no estimate
    population: int | str | None = None


@dataclass(frozen=True)
class TablePolicy:
    table: str
    identifiers: tuple[str, ...]
    quasi_identifiers: tuple[QuasiIdentifier, ...]
    sensitive: tuple[Sensitive, ...]
    insensitive: tuple[str, ...]
    requirement: Requirement
    #: the identifier column whose value is one person, in a table with several rows per person
    #: (visits): every class then holds k persons, not k rows (pushdown/persons.py)
    person: str | None = None
    report: ReportOptions = field(default_factory=ReportOptions)

    def qi(self, column: str) -> QuasiIdentifier | None:
        return next((q for q in self.quasi_identifiers if q.column == column), None)

    @property
    def releasable(self) -> tuple[str, ...]:
        """Columns a release may contain, in policy order; identifiers never are."""
        return (
            tuple(q.column for q in self.quasi_identifiers)
            + tuple(s.column for s in self.sensitive)
            + self.insensitive
        )

    @property
    def known_columns(self) -> frozenset[str]:
        return frozenset(self.releasable) | frozenset(self.identifiers)


@dataclass(frozen=True)
class Policy:
    tables: dict[str, TablePolicy] = field(default_factory=dict)
    source: str = "<dict>"

    def for_table(self, name: str) -> TablePolicy | None:
        return self.tables.get(name.lower())
