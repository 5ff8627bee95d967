"""engine.device.cupy_on_device: the one check every GPU backend's constructor makes, and the
messages a user reads when the GPU cannot run the fit."""
import sys
import types

import pytest

from engine import device


def test_without_cupy_the_message_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)          # import cupy -> ImportError
    with pytest.raises(ValueError, match=r"pip install 'survscan\[gpu\]'"):
        device.cupy_on_device(10)


@pytest.fixture
def fake_cupy(monkeypatch):
    """A stand-in CuPy module; the number of devices it reports is set per test."""
    module = types.ModuleType("cupy")
    monkeypatch.setitem(sys.modules, "cupy", module)
    return module


def test_no_device_names_what_to_use_instead(fake_cupy, monkeypatch):
    monkeypatch.setattr(device, "device_count", lambda: 0)
    with pytest.raises(ValueError, match=r"sees no CUDA device; use backend='cpu' or 'auto'\."):
        device.cupy_on_device(10)
    with pytest.raises(ValueError, match=r"sees no CUDA device; use backend='cpu'\.$"):
        device.cupy_on_device(instead="backend='cpu'")


def test_rows_past_int32_are_refused_naming_the_unit(fake_cupy, monkeypatch):
    monkeypatch.setattr(device, "device_count", lambda: 1)
    assert device.cupy_on_device(2 ** 31 - 1) is fake_cupy
    assert device.cupy_on_device() is fake_cupy
    with pytest.raises(ValueError, match=r"indexes eras with int32; 2,147,483,648 eras"):
        device.cupy_on_device(2 ** 31, "eras")
