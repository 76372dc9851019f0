"""PAULA (Sabharwal & Sedghi, UAI 2017): the geometric grid, the annotation plan, bounds on the precision function and what derives from them."""
