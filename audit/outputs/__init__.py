"""What people read: the HTML report, its plots, diffs, terminal printing."""
