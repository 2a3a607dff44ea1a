"""Reads the text of `perf script` with call stacks: the one parser the profile scripts here share."""


def read_stacks(path, header):
    """Events in time order: (time, thread name, frames innermost first, each 'symbol (library)').

    `header` is a compiled pattern for an event's first line, whose groups 1 and 3 are the thread's name and the
    time; the indented lines under it are its frames. A first line the pattern does not match drops its event.
    """
    events, current = [], None
    with open(path, errors="replace") as script:
        for line in script:
            if not line.strip():
                continue
            if not line[0].isspace():
                match = header.match(line)
                current = (float(match.group(3)), match.group(1).strip(), []) if match else None
                if current:
                    events.append(current)
            elif current:
                frame = line.strip()
                current[2].append(frame.split(" ", 1)[1] if " " in frame else frame)
    return sorted(events, key=lambda event: event[0])
