"""Importers: agent histories in their tools' own formats, into an Archive.

One module per format — ``openai`` (chat JSONL, both shapes), ``claude_code``,
``codex``, ``hermes`` — and the shared ``driver`` (detection, identity,
incremental writes, sync).  ``base`` holds what the readers share.

    from cjk_tokenizer.importers import import_source
    report = import_source(archive, "~/.codex/sessions")   # or Archive.import_source
    print(report.summary())
"""
from .base import ImportFileError, epoch
from .driver import FORMAT_CHOICES, FORMATS, ImportReport, detect_file, import_source, plan, run, sync

__all__ = ["FORMATS", "FORMAT_CHOICES", "ImportFileError", "ImportReport", "detect_file", "epoch",
           "import_source", "plan", "run", "sync"]
