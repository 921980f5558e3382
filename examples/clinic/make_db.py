"""Create the clinic example's database: patients, and their visits (one to four each; one
patient with twelve). Synthetic, and the same on every run (fixed seeds).

    python3 examples/clinic/make_db.py clinic.db                 # a SQLite file (created)
    python3 examples/clinic/make_db.py postgresql+psycopg://…    # or any SQLAlchemy URL

The tables must not exist yet. Values go to the database as bound parameters.
"""
from __future__ import annotations

import datetime
import random
import sys
from pathlib import Path

import sqlalchemy as sa

PATIENTS = 400
#: the patient with the most visits: a class of the visits must hold k persons, not k visits
FREQUENT = (17, 12)
OCCUPATIONS = ["nurse", "physician", "pharmacist", "teacher", "lecturer", "clerk", "accountant", "electrician",
               "carpenter", "student", "retired"]
DIAGNOSES = ["influenza", "bronchitis", "asthma", "gastritis", "appendicitis", "diabetes", "hypertension",
             "myocardial infarction", "fracture", "concussion"]
ZIPS = ["18055", "18057", "18059", "18069", "18106", "18107", "18109", "18119", "18146", "18147"]

metadata = sa.MetaData()
patients_table = sa.Table(
    "patients", metadata,
    sa.Column("patient_id", sa.Integer, primary_key=True), sa.Column("name", sa.String(60)),
    sa.Column("age", sa.Integer), sa.Column("sex", sa.String(1)), sa.Column("zip", sa.String(5)),
    sa.Column("occupation", sa.String(20)), sa.Column("insurance", sa.String(10)))
visits_table = sa.Table(
    "visits", metadata,
    sa.Column("visit_id", sa.Integer, primary_key=True), sa.Column("patient_id", sa.Integer),
    sa.Column("admitted", sa.Date), sa.Column("diagnosis", sa.String(30)), sa.Column("cost", sa.Integer))


def patients(seed: int = 2016) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for pid in range(1, PATIENTS + 1):
        age = max(18, min(95, int(rng.gauss(50, 17))))
        occupation = "retired" if age >= 67 else "student" if age < 25 else rng.choice(OCCUPATIONS[:9])
        rows.append({"patient_id": pid, "name": f"Patient {pid:03d}", "age": age, "sex": rng.choice("fm"),
                     "zip": rng.choice(ZIPS), "occupation": occupation,
                     "insurance": rng.choices(["public", "private"], [9, 1])[0]})
    return rows


def visits(seed: int = 2017) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for pid in range(1, PATIENTS + 1):
        for _ in range(FREQUENT[1] if pid == FREQUENT[0] else rng.randint(1, 4)):
            rows.append({"visit_id": len(rows) + 1, "patient_id": pid,
                         "admitted": datetime.date(2023, 1, 1) + datetime.timedelta(days=rng.randrange(365)),
                         "diagnosis": rng.choice(DIAGNOSES), "cost": rng.randrange(150, 9000, 10)})
    return rows


def create(url: str) -> tuple[int, int]:
    """Create both tables in the database at ``url`` and fill them; returns their row counts."""
    engine = sa.create_engine(url)
    p, v = patients(), visits()
    try:
        with engine.begin() as conn:
            metadata.create_all(conn)
            conn.execute(patients_table.insert(), p)
            conn.execute(visits_table.insert(), v)
    finally:
        engine.dispose()
    return len(p), len(v)


def main(argv: list[str]) -> None:
    if len(argv) != 1:
        sys.exit(__doc__)
    target = argv[0]
    url = target if "://" in target else f"sqlite:///{Path(target).resolve()}"
    n_patients, n_visits = create(url)
    shown = sa.engine.make_url(url).render_as_string(hide_password=True)
    print(f"patients: {n_patients} rows, visits: {n_visits} rows; query them with --db {shown}")


if __name__ == "__main__":
    main(sys.argv[1:])
