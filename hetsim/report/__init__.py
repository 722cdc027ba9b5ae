"""Reports: metrics, terminal table, plots, and file exporters (JSON, CSV, Chrome trace)."""
