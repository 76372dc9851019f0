"""One evaluation run: its steps, the bootstrap bands it scatters, and the run directory read back for the terminal."""
