"""The demo database: the patient table of John's thesis (Table 1), a synthetic clinic table, and the
clinic patients' hospital stays (one to four each): a join of two protected tables.

Everything is generated here, so ``sqlanon demo`` needs no server and no download.
"""
from __future__ import annotations

import random
from pathlib import Path

import sqlalchemy as sa

PATIENTS = [
    ("Hans Spargel", 14, "männlich", "18528", "deutsch", "Hodenkrebs"),
    ("Anna Schmidt", 7, "weiblich", "18528", "deutsch", "Keuchhusten"),
    ("Karl Einfalt", 15, "männlich", "18528", "deutsch", "Bronchitis"),
    ("Hilde Wilde", 65, "weiblich", "18540", "deutsch", "Grippe"),
    ("Susanne Müller", 71, "weiblich", "18540", "deutsch", "Herzinfarkt"),
    ("Maria Mauer", 88, "weiblich", "18546", "deutsch", "Darmkrebs"),
    ("Klaus Kur", 16, "männlich", "18528", "deutsch", "Grippe"),
    ("Anne Haber", 9, "weiblich", "18528", "deutsch", "Magersucht"),
    ("Diana Will", 8, "weiblich", "18528", "deutsch", "Grippe"),
    ("Johann Kraus", 69, "männlich", "18546", "deutsch", "Lungenkrebs"),
    ("Max Interesse", 66, "männlich", "18551", "deutsch", "Gehirnerschütterung"),
    ("Mustafar Jamir", 68, "männlich", "18551", "amerikanisch", "Gehirnerschütterung"),
    ("Sylvia Sauer", 65, "weiblich", "18546", "deutsch", "Diabetes"),
]

DIAGNOSES = ["Grippe", "Bronchitis", "Diabetes", "Herzinfarkt", "Migräne", "Asthma", "Gastritis", "HIV"]
WARDS = ["A", "B", "C", "D"]

POLICY = {"tables": {
    "patients": {
        "identifiers": ["name"],
        "quasi_identifiers": {"age": {"type": "interval", "levels": [5, 10, 20, 40]},
                              "sex": {"type": "suppress"}, "zip": {"type": "mask", "levels": [1, 2, 3]}},
        "sensitive": {"disease": {"type": "categorical"}},
        "insensitive": ["nationality"],
        "privacy": {"k": 2, "alpha": {"value": 0.5, "protect": "all"}, "max_suppression": 0.2},
    },
    "clinic": {
        "identifiers": ["patient_id", "name"],
        "quasi_identifiers": {"age": {"type": "interval", "levels": [5, 10, 20, 40]},
                              "zip": {"type": "mask", "levels": [1, 2, 3, 5]},
                              "sex": {"type": "suppress"}},
        "sensitive": {"diagnosis": {"type": "categorical"}},
        "insensitive": ["ward"],
        "privacy": {"k": 5, "alpha": {"value": 0.3, "protect": ["HIV", "Herzinfarkt"]}, "max_suppression": 0.05},
    },
    "stays": {
        "identifiers": ["patient_id"],
        "insensitive": ["days", "cost"],
        "privacy": {"k": 5},
    },
}}

QUERIES = [
    "SELECT age, sex, zip, disease FROM patients",
    "SELECT age, zip, diagnosis FROM clinic WHERE age BETWEEN 30 AND 50",
    "SELECT sex, COUNT(*) AS n FROM clinic WHERE ward = 'B' GROUP BY sex",
    # classes count persons: one patient's stays are several joined rows (analyze/linked.py)
    "SELECT c.age, c.zip, c.diagnosis, s.days FROM clinic c JOIN stays s ON s.patient_id = c.patient_id "
    "WHERE s.days >= 7",
]


def synthetic_clinic(n: int, seed: int = 7) -> list[tuple]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        age = max(0, min(99, int(rng.gauss(45, 18))))
        zip_ = f"18{rng.choice('5555567')}{rng.randint(0, 9)}{rng.randint(0, 9)}"
        sex = rng.choice(["m", "w"])
        weights = [30, 15, 12 + age // 10, 3 + age // 8, 10, 8, 8, 2]
        rows.append((i + 1, f"Person {i + 1}", age, zip_, sex, rng.choices(DIAGNOSES, weights)[0], rng.choice(WARDS)))
    return rows


def synthetic_stays(clinic: list[tuple], seed: int = 11) -> list[tuple]:
    rng = random.Random(seed)
    return [(row[0], days, days * rng.randint(400, 900)) for row in clinic
            for days in (rng.randint(1, 21) for _ in range(rng.randint(1, 4)))]


def create(path: Path, n: int = 5000) -> str:
    url = f"sqlite:///{path}"
    engine = sa.create_engine(url)
    md = sa.MetaData()
    patients = sa.Table("patients", md, sa.Column("name", sa.String(60)), sa.Column("age", sa.Integer),
                        sa.Column("sex", sa.String(10)), sa.Column("zip", sa.String(5)),
                        sa.Column("nationality", sa.String(20)), sa.Column("disease", sa.String(40)))
    clinic = sa.Table("clinic", md, sa.Column("patient_id", sa.Integer), sa.Column("name", sa.String(60)),
                      sa.Column("age", sa.Integer), sa.Column("zip", sa.String(5)), sa.Column("sex", sa.String(1)),
                      sa.Column("diagnosis", sa.String(40)), sa.Column("ward", sa.String(1)))
    stays = sa.Table("stays", md, sa.Column("patient_id", sa.Integer), sa.Column("days", sa.Integer),
                     sa.Column("cost", sa.Integer))
    md.drop_all(engine)
    md.create_all(engine)
    rows = synthetic_clinic(n)
    with engine.begin() as c:
        c.execute(patients.insert(), [dict(zip(patients.c.keys(), r)) for r in PATIENTS])
        c.execute(clinic.insert(), [dict(zip(clinic.c.keys(), r)) for r in rows])
        c.execute(stays.insert(), [dict(zip(stays.c.keys(), r)) for r in synthetic_stays(rows)])
    engine.dispose()
    return url
