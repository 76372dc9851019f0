"""prdist: guaranteed bounds and confidence bands on the precision of massive ranked resources."""

from .bounds import PaulaBounds, paula_bounds, precision_function
from .plan import PaulaPlan, plan_paula

__version__ = "0.1.0"

__all__ = ["PaulaBounds", "PaulaPlan", "paula_bounds", "plan_paula", "precision_function"]
