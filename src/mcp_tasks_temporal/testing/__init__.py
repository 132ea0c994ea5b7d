"""Test fixtures that ship with the package: the conformance suite's app and a scripted OpenAI-compatible model."""
