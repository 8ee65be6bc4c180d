{
  "variables": {
    "pedersen_window_bits%": 16
  },
  "target_defaults": {
    "defines": ["PED_W=<(pedersen_window_bits)"],
    "cflags": ["-O3", "-std=gnu11", "-fno-strict-aliasing"],
    "cflags!": ["-O2"],
    "xcode_settings": { "OTHER_CFLAGS": ["-O3", "-std=gnu11"] }
  },
  "targets": [
    {
      "target_name": "pedersen_kernel_adx",
      "type": "static_library",
      "sources": ["pedersen/kernel_scalar.c"],
      "defines": ["PED_SCALAR_ADX"]
    },
    {
      "target_name": "dacd_native",
      "dependencies": ["pedersen_kernel_adx"],
      "sources": [
        "dacd_native.c",
        "pedersen/pedersen_napi.c",
        "pedersen/engine.c",
        "pedersen/kernel_scalar.c",
        "pedersen/kernel_ifma.c",
        "pedersen/safegcd.c",
        "napi_util.c",
        "sd_notify.c",
        "trees/merkle.c",
        "trees/merkle_napi.c",
        "trees/patricia.c",
        "trees/patricia_napi.c",
        "trees/node_cache.c",
        "trees/node_cache_napi.c",
        "trees/record_format_napi.c"
      ],
      "libraries": ["-lpthread"]
    }
  ]
}
