"""Bootstrap confidence bands for the functional PR curve (Clémençon & Vayatis 2009) and their normal approximation."""
