"""The engine's floor 0: errors, devices, threads and processes, memory estimates, argument checks and the weighted Gram matrix; imports nothing else of survscan."""
