"""`layout-toolkit-tour`: a short tour of the three packages through their command lines.

Each step runs a package's own CLI in a child process (the packages stay independent), so what
the tour prints is exactly what a user typing the same command sees.
"""

import subprocess
import sys

EXAMPLE_MODULE = """\
module {
  sdy.mesh @mesh = <["x"=2, "y"=2]>
  func.func @main(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
    %0 = stablehlo.constant dense<1.0> : tensor<8x8xf32>
    %1 = stablehlo.add %arg0, %0 : tensor<8x8xf32>
    %2 = sdy.sharding_constraint %1 <@mesh, [{"x"}, {"y"}]> : tensor<8x8xf32>
    %3 = stablehlo.multiply %2, %0 : tensor<8x8xf32>
    return %3 : tensor<8x8xf32>
  }
}
"""

STEPS = [
    ("tiling: where each element of a tiled bf16 array lives",
     ["-m", "tiling", "show", "bf16[4,8]{1,0:T(2,4)(2,1)}"], None),
    ("sharding: which device holds which block",
     ["-m", "sharding", "show", '<["x"=2, "y"=4]>', '#sdy.sharding<@mesh, [{"x"}, {"y"}]>', "6x8"], None),
    ("sdy_passes: the Shardy import pipeline on a small module",
     ["-m", "sdy_passes", "--sdy-import-pipeline", "-"], EXAMPLE_MODULE),
]


def main() -> int:
    for title, args, stdin in STEPS:
        print(f"\n=== {title}\n$ python {' '.join(repr(a) if ' ' in a else a for a in args)}", flush=True)
        if stdin:
            print(stdin, flush=True)
        subprocess.run([sys.executable, *args], input=stdin, text=True, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
