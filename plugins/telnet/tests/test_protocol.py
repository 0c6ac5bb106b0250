"""The telnet codec: option negotiation, framing, escaping, login automation."""

from hostgate_telnet.protocol import (
    BINARY,
    DO,
    DONT,
    ECHO,
    IAC,
    NAWS,
    SB,
    SE,
    SGA,
    TTYPE,
    WILL,
    WONT,
    TelnetCodec,
)
from hostgate_telnet.terminal import LoginAutomation


def cmd(*values: int) -> bytes:
    return bytes(values)


def test_negotiation_answers_once_and_never_loops():
    codec = TelnetCodec("xterm-256color", 80, 24)
    data = codec.receive(cmd(IAC, DO, TTYPE, IAC, DO, NAWS, IAC, WILL, ECHO, IAC, DO, 39) + b"hi")
    assert data == b"hi"
    replies = codec.replies()
    assert cmd(IAC, WILL, TTYPE) in replies
    assert cmd(IAC, WILL, NAWS) + cmd(IAC, SB, NAWS, 0, 80, 0, 24, IAC, SE) in replies
    assert cmd(IAC, DO, ECHO) in replies
    assert cmd(IAC, WONT, 39) in replies
    # repeated requests for agreed options get no answer
    codec.receive(cmd(IAC, DO, TTYPE, IAC, WILL, ECHO))
    assert codec.replies() == b""
    codec.receive(cmd(IAC, DONT, NAWS, IAC, DONT, NAWS))
    assert codec.replies() == cmd(IAC, WONT, NAWS)
    assert codec.window_size(100, 40) == b""


def test_terminal_type_and_window_size_reports():
    codec = TelnetCodec("xterm-256color", 80, 24)
    codec.receive(cmd(IAC, DO, TTYPE, IAC, DO, NAWS))
    codec.replies()
    codec.receive(cmd(IAC, SB, TTYPE, 1, IAC, SE))
    assert codec.replies() == cmd(IAC, SB, TTYPE, 0) + b"xterm-256color" + cmd(IAC, SE)
    assert codec.window_size(255, 50) == cmd(IAC, SB, NAWS, 0, 255, 255, 0, 50, IAC, SE)


def test_data_framing():
    codec = TelnetCodec("xterm", 80, 24)
    assert codec.receive(b"a" + cmd(IAC, IAC) + b"b\r\x00c") == b"a\xffb\rc"
    split = codec.receive(b"x" + cmd(IAC)) + codec.receive(cmd(WILL, SGA) + b"y")
    assert split == b"xy"
    assert codec.replies() == cmd(IAC, DO, SGA)
    assert codec.encode(b"ls\r") == b"ls\r\x00"
    assert codec.encode(b"\xff\r\n") == b"\xff\xff\r\n"
    codec.receive(cmd(IAC, DO, BINARY))
    assert codec.replies() == cmd(IAC, WILL, BINARY)
    assert codec.encode(b"ls\r") == b"ls\r"


def test_login_automation_answers_each_prompt_once():
    login = LoginAutomation("bob", "pw")
    assert login.observe(b"Welcome\r\nlogin: ") == b"bob\r"
    assert login.observe(b"bob\r\nPassword: ") == b"pw\r"
    assert not login.active
    assert login.observe(b"Login incorrect\r\nlogin: ") is None
    assert LoginAutomation(None, None).observe(b"login: ") is None


def test_an_echoed_password_is_masked():
    login = LoginAutomation("bob", "s3cret-pw")
    login.observe(b"login: ")
    assert login.observe(b"bob\r\nPassword: ") == b"s3cret-pw\r"
    assert login.redact(b"s3cret-pw\r\n$ ") == b"*********\r\n$ "
    assert login.redact(b"x" * 5000) == b"x" * 5000
    assert login.redact(b"s3cret-pw") == b"s3cret-pw"  # only right after sending it
