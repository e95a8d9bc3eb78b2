"""Run outputs: per-request JSONL records, report.json and summary.csv, the console summary."""

from assay.reports.files import SUMMARY_COLUMNS, summary_row, write_report
from assay.reports.loader import load_report
from assay.reports.report import (
    SCHEMA_VERSION,
    Environment,
    Incomplete,
    Report,
    StepReport,
    Totals,
    build_report,
    collect_environment,
)
from assay.reports.summary import render_summary
from assay.reports.validity import Validity, assess_validity
from assay.run_folder import REPORT_FILE, SUMMARY_FILE

__all__ = [
    "REPORT_FILE",
    "SCHEMA_VERSION",
    "SUMMARY_COLUMNS",
    "SUMMARY_FILE",
    "Environment",
    "Incomplete",
    "Report",
    "StepReport",
    "Totals",
    "Validity",
    "assess_validity",
    "build_report",
    "collect_environment",
    "load_report",
    "render_summary",
    "summary_row",
    "write_report",
]
