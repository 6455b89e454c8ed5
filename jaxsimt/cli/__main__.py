"""`python -m jaxsimt.cli ...`: the `jaxsimt` command."""
import sys

from jaxsimt.cli import main

sys.exit(main())
