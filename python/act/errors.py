"""The exporter's error: a step act cannot export, said in one line
(`act.export: error: ...`)."""


class ExportError(Exception):
    pass
