# nix develop ./nix   -- the same environment as `nix-shell nix/` (see
# default.nix for the pins, taken from oar-team/batsim's flake.lock).
{
  description = "iosched with the real Batsim 4.2.x (kapack)";

  inputs = {
    nixpkgs.url = "github:nixos/nixpkgs/057f9aecfb71c4437d2b27d3323df7f93c010b7e";
    nur-kapack = {
      url = "github:oar-team/nur-kapack/052fb35eb29228d9e4ea8afa09e9f0e390782cbd";
      inputs.nixpkgs.follows = "nixpkgs";
    };
  };

  outputs = { self, nixpkgs, nur-kapack }:
    let
      system = "x86_64-linux";
      pkgs = import nixpkgs { inherit system; };
      kapack = import nur-kapack { inherit pkgs; };
    in {
      devShells.${system}.default = import ./default.nix {
        nixpkgsSrc = nixpkgs;
        kapackSrc = nur-kapack;
        inherit pkgs kapack;
      };
    };
}
