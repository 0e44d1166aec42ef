"""What composition steps share: child runs, fan-out workers and step-output
references (`{{ STEP.out.NAME }}`). Imports no step kind."""
