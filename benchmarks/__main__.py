"""`python -m benchmarks`: the CPU side-by-side timing run (see benchmarks/run.py);
`python -m benchmarks --gpu ...` runs the GPU one (benchmarks/gpu.py)."""
import sys

if "--gpu" in sys.argv[1:]:
    from benchmarks.gpu import main
    main([a for a in sys.argv[1:] if a != "--gpu"])
else:
    from benchmarks.run import main
    main()
