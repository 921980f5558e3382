"""α-deassociation (Wong et al. 2009; John's thesis, Def. 3.2): |(E,s)|/|E| <= α for every class E
and every protected value s. Compared in integers: maxp·den <= num·size with α = num/den."""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from sqlglot import exp

from sqlanon.criteria.base import Verdict
from sqlanon.policy.model import Alpha


def alpha_fraction(value: float | None) -> Fraction:
    """α as an exact fraction, so that SQL and Python compare classes in integers alike."""
    return Fraction(1) if value is None else Fraction(value).limit_denominator(10**6)


def protected_flag(alpha: Alpha | None, sv: exp.Expression) -> exp.Expression:
    """1 when the sensitive value ``sv`` is α-protected, else 0 (always 0 without α)."""
    if alpha is None:
        return exp.Literal.number(0)
    if alpha.protect is None:
        return exp.Literal.number(1)
    values = [exp.Literal.string(v) if isinstance(v, str) else exp.Literal.number(v) for v in alpha.protect]
    return exp.Case(ifs=[exp.If(this=exp.In(this=sv.copy(), expressions=values), true=exp.Literal.number(1))],
                    default=exp.Literal.number(0))


@dataclass(frozen=True)
class AlphaDeassociation:
    alpha: Fraction
    name: str = "alpha-deassociation"
    attribute: None = None

    def statement(self, counts: str, whole: str) -> None:
        return None

    def aggregates(self) -> dict[str, exp.Expression]:
        size, maxp = exp.column("size"), exp.column("maxp")
        ratio = exp.Div(this=exp.Mul(this=maxp.copy(), expression=exp.Literal.number("1.0")), expression=size.copy())
        over = exp.GT(this=exp.Mul(this=maxp.copy(), expression=exp.Literal.number(self.alpha.denominator)),
                      expression=exp.Mul(this=exp.Literal.number(self.alpha.numerator), expression=size.copy()))
        return {
            "alpha_max": exp.Max(this=ratio),
            "alpha_violations": exp.Sum(this=exp.Case(ifs=[exp.If(this=over, true=exp.Literal.number(1))],
                                                      default=exp.Literal.number(0))),
        }

    def judge(self, values: dict[str, object]) -> Verdict:
        a = values.get("alpha_max")
        bad = int(values.get("alpha_violations") or 0)
        shown = "n/a" if a is None else f"{float(a):.4f}"
        return Verdict(self.name, bad == 0, f"largest protected share {shown} (alpha={float(self.alpha):g})")
