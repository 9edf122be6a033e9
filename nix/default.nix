# nix-shell nix/   -- the real Batsim 4.2.x, robin (batexpe), pybatsim 3.2.1
# (with a working pyzmq), SimGrid 3.32's Python bindings and this package.
#
# Pins (exact revisions, both taken from the flake.lock of Batsim's own
# repository, oar-team/batsim at commit c62e7882ce096d374a9078a5cf83e9e8ed62c178,
# i.e. the nur-kapack + nixpkgs pair Batsim's developers build against):
#   nur-kapack  052fb35eb29228d9e4ea8afa09e9f0e390782cbd (2024-06-17)
#   nixpkgs     057f9aecfb71c4437d2b27d3323df7f93c010b7e (NixOS 23.11)
# The sha256 values are those locks' narHash (NAR hash of the unpacked tree,
# what fetchTarball checks).
#
# kapack attributes used (nur-kapack default.nix of that period):
#   batsim-420   Batsim 4.2.0 (4.2.x protocol) on SimGrid 3.34 (light)
#   batexpe      robin / robintest 1.2.0
#   pybatsim-321 pybatsim 3.2.1, pyzmq constraint loosened by kapack's patch
#   simgrid-332  SimGrid 3.32 with Python bindings (output "python")
# Every one can be replaced from the command line, e.g.
#   nix-shell nix/ --arg batsim '(import <nixpkgs> {}).hello'
# See nix/README.md for what was and was not verified.
{ nixpkgsSrc ? fetchTarball {
    url = "https://github.com/NixOS/nixpkgs/archive/057f9aecfb71c4437d2b27d3323df7f93c010b7e.tar.gz";
    sha256 = "sha256-MxCVrXY6v4QmfTwIysjjaX0XUhqBbxTWWB4HXtDYsdk=";
  }
, kapackSrc ? fetchTarball {
    url = "https://github.com/oar-team/nur-kapack/archive/052fb35eb29228d9e4ea8afa09e9f0e390782cbd.tar.gz";
    sha256 = "sha256-KVeKDdab2wMYMo60mEQHz8Dus4ddhxJ1HPCXzUt9ei8=";
  }
, pkgs ? import nixpkgsSrc { }
, kapack ? import kapackSrc { inherit pkgs; }
, batsim ? kapack.batsim-420
, batexpe ? kapack.batexpe
, pybatsim ? kapack.pybatsim-321
  # SimGrid for the embedded engine's Python bindings: 3.32, the version of
  # the golden runs and of Debian 12 (tests are skipped by kapack's build
  # here: they take long and are not ours).
, simgrid ? kapack.simgrid-332.overrideAttrs (_: { doCheck = false; })
}:

let
  python = pkgs.python3;
  pyVersion = pkgs.lib.versions.majorMinor python.version;
  iosched = python.pkgs.buildPythonPackage {
    pname = "iosched";
    version = "0.1.0";
    format = "pyproject";
    src = pkgs.lib.cleanSource ../.;
    nativeBuildInputs = [ python.pkgs.setuptools ];
    propagatedBuildInputs = with python.pkgs; [
      procset sortedcontainers docopt pyzmq orjson click jsonschema defusedxml psutil
      pyyaml numpy pandas matplotlib scipy tqdm dask distributed
      numba  # the extra "fast" (iosched.bb.compiled)
    ];
    doCheck = false;
  };
  pyenv = python.withPackages (ps: [
    pybatsim
    iosched
    ps.pytest
    ps.hypothesis
  ]);
in
pkgs.mkShell {
  name = "iosched-real-batsim";
  buildInputs = [ batsim batexpe pyenv ];
  # SimGrid's Python module lives in the "python" output of kapack's simgrid
  # (built for the same python3 as pyenv).
  shellHook = ''
    export PYTHONPATH="${simgrid.python}/lib/python${pyVersion}/site-packages''${PYTHONPATH:+:$PYTHONPATH}"
    # work on the checkout (edits visible without rebuilding the shell)
    export PYTHONPATH="$PWD/src:$PYTHONPATH"
  '';
  passthru = { inherit batsim batexpe pybatsim simgrid iosched; };
}
