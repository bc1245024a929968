"""Tests of blob stores, descriptors, export, adoption and handover."""
