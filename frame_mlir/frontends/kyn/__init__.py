"""The `.kyn` language: parser, checker, lowering to frame IR, native trainer, formatter,
language server and exporters (docs/kyn.md); its command line is `frame-kyn`
(`tools/frame_kyn.py`)."""
