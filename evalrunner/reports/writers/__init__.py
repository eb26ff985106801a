"""The files a run leaves behind, and publishing a report set atomically."""
