# nix-shell nix/  -- the real Batsim 4.2.x, robin (batexpe), pybatsim and
# SimGrid's Python bindings from the kapack package set, plus this package's
# Python dependencies.
#
# Pins: NUR-kapack and nixpkgs are given as arguments so that a revision can
# be fixed from the command line; the exact pinned revisions are tracked in
# the real-Batsim issue (see README, "Other machines").
{ kapack ? import (fetchTarball "https://github.com/oar-team/nur-kapack/archive/master.tar.gz") { }
, pkgs ? kapack.pkgs
}:

let
  python = pkgs.python3;
  pyenv = python.withPackages (ps: with ps; [
    kapack.pybatsim
    procset sortedcontainers pyzmq click jsonschema defusedxml psutil pyyaml
    numpy pandas matplotlib pytest hypothesis
  ]);
in
pkgs.mkShell {
  buildInputs = [
    kapack.batsim
    kapack.batexpe
    kapack.simgrid
    pyenv
  ];
  shellHook = ''
    export PYTHONPATH="$PWD/src:$PYTHONPATH"
  '';
}
