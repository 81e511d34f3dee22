"""The config systems, one module each behind `base.ConfigSystem`; `registry` finds a module's `SYSTEMS`.

Adding a system is one module that defines `SYSTEMS` (and its kind in `base.Kind`); nothing else names it.
This package's own module stays empty: the model imports `base.Kind` before anything else is defined.
"""
