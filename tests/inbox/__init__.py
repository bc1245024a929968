"""Tests of the request inbox, the capability gate and serving."""
