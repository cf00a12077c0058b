from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "ingest"
BENCHMARKS = Path(__file__).resolve().parents[4] / "shared" / "benchmarks"
