"""Exports of a results folder to other tools' formats."""
