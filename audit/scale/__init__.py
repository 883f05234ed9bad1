"""Running many units: bounded workers, pools or Dask, resumable parts, progress."""
