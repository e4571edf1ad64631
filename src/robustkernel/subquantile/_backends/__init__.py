"""The Dask and GPU backends."""
