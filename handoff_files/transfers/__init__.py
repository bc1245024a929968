"""Handing a sealed generation to another agent: blob stores, descriptors, export, verified adoption and transfer."""
