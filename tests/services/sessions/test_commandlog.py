"""The command log from the echo stream: prompts, previews, passwords never stored."""

from __future__ import annotations

from hostgate.services.sessions.commandlog import CommandTracker
from hostgate.services.sessions.terminal_lines import LineBuffer


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


def test_line_buffer_drops_the_payload_of_every_string_escape():
    """OSC (BEL or ST ended), DCS, SOS, PM and APC strings are never text of a line."""
    lines = LineBuffer()
    clipboard = "\x1b]52;c;aG9zdGlsZQ==\x07"
    hyperlink = "\x1b]8;;http://x.invalid\x1b\\link\x1b]8;;\x1b\\"
    assert lines.feed(f"a{clipboard}b {hyperlink}\n") == ["ab link"]
    for introducer in "PX^_":
        assert lines.feed(f"x\x1b{introducer}+q544e\x07still\x1b\\y\n") == ["xy"]


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


def keys_and_echo(log: CommandTracker, clock: Clock, recorded: str) -> None:
    """Replay a recorded shell session: ``prompt||echo|echo|...`` after each key in turn."""
    banner, _, rest = recorded.partition("||")
    log.output(banner)
    clock.now += 300
    log.tick()
    return rest.split("|")


def type_keys(log: CommandTracker, clock: Clock, keys: list[str], echoes: list[str]) -> None:
    for key, echo in zip(keys, echoes, strict=False):
        log.input(key)
        clock.now += 50
        log.output(echo)


def test_keys_one_by_one_with_prompt_characters_inside():
    # the shell echoes each key as it arrives; a line ending in "$" is not a prompt
    log, clock = tracker()
    log.output("\x1b[?2004h$ ")
    clock.now += 300
    log.tick()
    for command, output in [("echo dollar-$((1+1))", "dollar-2"), ("echo a$ b# c% d> e", "")]:
        for key in command:
            log.input(key)
            clock.now += 50
            log.output(key)
            clock.now += 300
            log.tick()
        log.input("\r")
        log.output("\r\n\x1b[?2004l\r" + (output + "\r\n" if output else "") + "\x1b[?2004h$ ")
        clock.now += 300
        log.tick()
    log.finish()
    entries = log.drain()
    assert [e.command for e in entries] == ["echo dollar-$((1+1))", "echo a$ b# c% d> e"]
    assert entries[0].output_preview == "dollar-2"


def test_a_wrapped_line_edited_in_the_middle():
    # bash at 20 columns: 24 characters typed, 13 left arrows, "X" inserted (recorded)
    recorded = (
        "\x1b[?2004h$ ||e|c|h|o| |0|1|2|3|4|5|6|7|8|9|a|b|c \r|d|e|f|g|h|i|j|\x08|\x08|\x08|"
        "\x08|\x08|\x08|\r|\x1b[A" + "\x1b[C" * 19 + "|\x08|\x08|\x08|\x08|\x08|X789abcdefghij"
        "\x1b[A" + "\x1b[C" * 7 + "|\r\n\r\r\n\x1b[?2004l\r0123456X789abcdefghij\r\n\x1b[?2004h$ |"
    )
    clock = Clock()
    log = CommandTracker(clock, columns=20)
    echoes = keys_and_echo(log, clock, recorded)
    type_keys(log, clock, [*"echo 0123456789abcdefghij", *["\x1b[D"] * 13, "X", "\r"], echoes)
    log.finish()
    [entry] = log.drain()
    assert entry.command == "echo 0123456X789abcdefghij"
    assert entry.output_preview == "0123456X789abcdefghij"


def test_completion_list_and_ctrl_l_redraw_the_prompt():
    log, clock = tracker()
    log.output("$ ")
    clock.now += 300
    log.tick()
    type_keys(
        log,
        clock,
        [*"ls al", "\t", "\t"],
        [*"ls al", "pha\x07", "\r\nalpha1  alpha2\r\n$ ls alpha"],
    )
    type_keys(
        log, clock, ["1", "\x0c", "\r"], ["1", "\x1b[H\x1b[2J$ ls alpha1", "\r\nalpha1\r\n$ "]
    )
    log.finish()
    [entry] = log.drain()
    assert (entry.command, entry.output_preview) == ("ls alpha1", "alpha1")


def test_full_screen_programs_are_skipped():
    log, clock = tracker()
    log.output("$ ")
    clock.now += 300
    log.tick()
    type_command(log, clock, "vim notes", "", prompt="")
    log.output("\x1b[?1049h\x1b[1;1H~\r\n~ $ ")
    clock.now += 300
    log.tick()
    for key in ":!rm -rf x\r":
        log.input(key)
        log.output(key)
    log.output("\x1b[?1049l$ ")
    type_command(log, clock, "ls", "a\r\n")
    log.finish()
    assert [e.command for e in log.drain()] == ["vim notes", "ls"]


def test_lines_typed_ahead_while_a_command_runs():
    log, clock = tracker()
    log.output("$ ")
    clock.now += 300
    log.tick()
    type_command(log, clock, "sleep 2", "", prompt="")
    # with line editing (bash): the terminal echoes the keys at once, the shell again
    # after its prompt; the first echo ends in "$" and must not pass for a prompt
    type_keys(log, clock, [*"echo next-$", "\r"], [*"echo next-$", "\r\n"])
    clock.now += 300
    log.tick()
    log.output("$ echo next-$\r\nnext-$\r\n$ ")
    clock.now += 300
    log.tick()
    # without line editing (dash): the prompt is followed by the output at once
    type_command(log, clock, "sleep 1", "", prompt="")
    type_keys(log, clock, [*"echo more-$((1))", "\r"], [*"echo more-$((1))", "\r\n"])
    log.output("$ more-1\r\n$ ")
    log.finish()
    entries = log.drain()
    assert [e.command for e in entries] == ["sleep 2", "echo next-$", "sleep 1", "echo more-$((1))"]
    assert entries[1].output_preview == "next-$"
    assert entries[3].output_preview == "more-1"


def test_keys_typed_before_the_prompt_and_enter_after():
    # the terminal echoes "ec" while sleep runs; bash shows it again after its prompt
    # (the line reads "ec$ ec"), dash does not ("ec$ ") but reads it first all the same
    for after_prompt in ("$ ec", "$ "):
        log, clock = tracker()
        log.output("$ ")
        clock.now += 300
        log.tick()
        type_command(log, clock, "sleep 1", "", prompt="")
        type_keys(log, clock, [*"ec"], [*"ec"])
        log.output(after_prompt)
        clock.now += 300
        log.tick()
        type_keys(log, clock, [*"ho x", "\r"], [*"ho x", "\r\nx\r\n$ "])
        log.finish()
        assert [e.command for e in log.drain()] == ["sleep 1", "echo x"], after_prompt


def test_keys_a_program_read_do_not_start_the_next_command():
    # a pager without the alternate screen (less -X, more) reads space and q unechoed
    log, clock = tracker()
    log.output("$ ")
    clock.now += 300
    log.tick()
    type_command(log, clock, "more notes", "line 1\r\n--More--", prompt="")
    type_keys(log, clock, [" ", "q"], ["\r\x1b[Kline 2\r\n--More--", "\r\x1b[K"])
    log.output("$ ")
    clock.now += 300
    log.tick()
    type_keys(log, clock, [*"ls", "\r"], [*"ls", "\r\na\r\n$ "])
    log.finish()
    assert [e.command for e in log.drain()] == ["more notes", "ls"]


def test_bracketed_paste_keeps_wrapped_lines_whole():
    """A pasted block, its first line wrapped over two rows, echoed as bash 5 does."""
    clock = Clock()
    log = CommandTracker(clock, columns=20)
    log.output("$ ")
    clock.now += 500
    log.tick()
    long = "echo " + "x" * 20
    log.input(f"\x1b[200~{long}\recho short\r\x1b[201~")
    # the block highlighted, then redrawn plain (the cursor back on the prompt row)
    log.output(f"\x1b[7m{long[:18]}{long[18:]}\r\n\recho short\x1b[27m\r\n\r")
    log.output(f"\x1b[A\x1b[A\x1b[A\r$ {long}\r\n\recho short\r\n\r\x1b[A")
    log.input("\r")
    log.output("\r\n" + "x" * 20 + "\r\nshort\r\n$ ")
    clock.now += 500
    log.tick()
    entries = log.drain()
    assert [(e.command, e.output_preview) for e in entries] == [
        (long, None),
        ("echo short", "x" * 20 + "\nshort"),
    ]
