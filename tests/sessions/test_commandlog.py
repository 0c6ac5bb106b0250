"""The command log from the echo stream: prompts, previews, passwords never stored."""

from __future__ import annotations

from hostgate.services.commandlog import CommandTracker, LineBuffer


class Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


def tracker() -> tuple[CommandTracker, Clock]:
    clock = Clock()
    return CommandTracker(clock), clock


def type_command(log: CommandTracker, clock: Clock, command: str, output: str, prompt: str = "$ "):
    log.input(command + "\r")
    clock.now += 100
    log.output(command + "\r\n" + output)
    clock.now += 100
    log.output(prompt)
    clock.now += 300
    log.tick()


def test_line_buffer_replays_edits():
    lines = LineBuffer()
    assert lines.feed("abc\bX\r\n") == ["abX"]
    assert lines.feed("hello\x1b[2Dwor\r\n") == ["helwor"]
    assert lines.feed("\x1b[31mred\x1b[0m \x1b]0;title\x07ok\r\n") == ["red ok"]
    assert lines.feed("abcdef\r\x1b[Kxy\n") == ["xy"]
    assert lines.feed("a\tb\n") == ["a       b"]


def test_commands_with_elapsed_and_preview():
    log, clock = tracker()
    log.output("Welcome to the box\r\nlast login: yesterday\r\n$ ")
    clock.now = 1_000
    type_command(log, clock, "ls", "a.txt\r\nb.txt\r\n")
    type_command(log, clock, "pwd", "/home/alice\r\n")
    entries = log.drain()
    assert [e.command for e in entries] == ["ls", "pwd"]
    assert entries[0].elapsed == 1_000
    assert entries[0].output_preview == "a.txt\nb.txt"
    assert entries[1].output_preview == "/home/alice"


def test_banner_before_the_first_prompt_is_skipped():
    log, clock = tracker()
    log.output("Last login: Tue from 10.0.0.1\r\n")
    log.output("motd line with a $ sign\r\n")
    log.output("$ ")
    clock.now += 500
    log.tick()
    type_command(log, clock, "id", "uid=0\r\n")
    assert [e.command for e in log.drain()] == ["id"]


def test_preview_is_cut():
    log, clock = tracker()
    log.output("$ ")
    log.tick()
    output = "".join(f"line {n}\r\n" for n in range(30))
    type_command(log, clock, "seq 30", output)
    [entry] = log.drain()
    assert entry.output_preview.splitlines()[:10] == [f"line {n}" for n in range(10)]
    assert entry.output_preview.endswith("\n...")
    type_command(log, clock, "cat big", "x" * 5000 + "\r\n")
    [entry] = log.drain()
    assert len(entry.output_preview) == 2003 and entry.output_preview.endswith("...")


def test_password_prompt_input_is_never_stored():
    log, clock = tracker()
    log.output("$ ")
    clock.now += 500
    log.tick()
    log.input("sudo -S whoami\r")
    log.output("sudo -S whoami\r\n[sudo] password for alice: ")
    log.input("Sup3r-Secret\r")
    log.output("\r\nroot\r\n$ ")
    clock.now += 500
    log.tick()
    # an echoing prompt: the typed secret comes back in the output
    log.input("read -p 'Password: ' pw; echo got $pw\r")
    log.output("read -p 'Password: ' pw; echo got $pw\r\nPassword: ")
    log.input("Sup3r-Secret-2\r")
    log.output("Sup3r-Secret-2\r\ngot Sup3r-Secret-2\r\n$ ")
    log.finish()
    entries = log.drain()
    text = repr(entries)
    assert "Sup3r-Secret" not in text
    commands = [e.command for e in entries]
    assert commands == [
        "sudo -S whoami",
        "[password]",
        "read -p 'Password: ' pw; echo got $pw",
        "[password]",
    ]
    assert entries[1].output_preview is None


def test_passphrase_and_ssh_prompts():
    log, clock = tracker()
    log.output("$ ")
    log.tick()
    log.input("ssh bob@db\r")
    log.output("ssh bob@db\r\nEnter passphrase for key '/home/a/.ssh/id_ed25519': ")
    log.input("hunter22\r")
    log.output("\r\nbob@db's password: ")
    log.input("hunter33\r")
    log.output("\r\ndb$ ")
    log.finish()
    entries = log.drain()
    assert [e.command for e in entries] == ["ssh bob@db", "[password]", "[password]"]
    assert "hunter" not in repr(entries)


def test_ctrl_c_and_multiline():
    log, clock = tracker()
    log.output("$ ")
    log.tick()
    log.input("sleep 100\r")
    log.output("sleep 100\r\n")
    log.input("\x03")
    log.output("^C\r\n$ ")
    log.input("abandoned\x03")
    log.output("abandoned^C\r\n$ ")
    log.input("for i in 1 2; do\r")
    log.output("for i in 1 2; do\r\n> ")
    log.input("echo $i; done\r")
    log.output("echo $i; done\r\n1\r\n2\r\n$ ")
    log.finish()
    assert [e.command for e in log.drain()] == ["sleep 100", "for i in 1 2; do", "echo $i; done"]


def test_long_running_commands_time_out():
    log, clock = tracker()
    log.output("$ ")
    log.tick()
    log.input("top\r")
    log.output("top\r\nPID USER\r\n")
    clock.now += 11_000
    log.tick()
    [entry] = log.drain()
    assert entry.command == "top" and entry.output_preview == "PID USER"
