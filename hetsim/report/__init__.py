"""Reports of a run, written from its numbers (:mod:`hetsim.analysis`): the terminal text, the files of
``--out`` (:mod:`hetsim.report.outputs`), the HTML pages, the Perfetto trace, the sweep figures."""
