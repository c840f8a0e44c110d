/// A shell for which ``CompletionScript`` can generate a completion script.
public enum CompletionShell: String, Sendable, Hashable, CaseIterable {
    /// GNU bash (3.2 and later; `compopt` is used when available).
    case bash
    /// Z shell, using `_arguments`.
    case zsh
    /// The fish shell (3.0 and later).
    case fish
}

/// Generates shell completion scripts from a ``CommandSpec`` tree.
///
/// The scripts complete subcommand names (including `help <subcommand>` at the root), the options of
/// each (sub)command, allowed option values, and file or directory names according to each option's
/// and argument's ``CompletionHint``.
///
/// ```swift
/// print(CompletionScript.generate(for: deckSpec, shell: .zsh))
/// ```
///
/// Installation (for a root command named `deck`):
/// - bash: `source <(deck completion bash)` in `~/.bashrc`, or save it as
///   `~/.local/share/bash-completion/completions/deck`;
/// - zsh: save it as `_deck` in a directory on `$fpath`, or `source <(deck completion zsh)` after `compinit`;
/// - fish: save it as `~/.config/fish/completions/deck.fish`.
public enum CompletionScript {
    /// The completion script for `shell`, ending with a newline.
    public static func generate(for root: CommandSpec, shell: CompletionShell) -> String {
        let commands = flatten(root, path: [root.name])
        switch shell {
        case .bash: return BashCompletion(root: root, commands: commands).script()
        case .zsh: return ZshCompletion(root: root, commands: commands).script()
        case .fish: return FishCompletion(root: root, commands: commands).script()
        }
    }

    /// Every command of the tree in pre-order, with its path.
    static func flatten(_ command: CommandSpec, path: [String]) -> [(path: [String], spec: CommandSpec)] {
        var result = [(path: path, spec: command)]
        for subcommand in command.subcommands {
            result += flatten(subcommand, path: path + [subcommand.name])
        }
        return result
    }

    /// A shell identifier fragment: every character outside `[A-Za-z0-9_]` becomes `_`.
    static func identifier(_ text: String) -> String {
        String(text.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") ? $0 : "_" })
    }

    /// `text` as a POSIX single-quoted word (valid in bash and zsh).
    static func singleQuoted(_ text: String) -> String {
        "'" + text.replacing("'", with: "'\\''") + "'"
    }

    /// All spellings of an option, e.g. `["--limit", "-l"]`.
    static func spellings(_ option: OptionSpec) -> [String] {
        ["--\(option.long)"] + (option.short.map { ["-\($0)"] } ?? [])
    }
}

extension String {
    /// `self` with a backslash before every character in `characters`.
    func escaping(_ characters: Set<Character>) -> String {
        var result = ""
        for character in self {
            if characters.contains(character) { result.append("\\") }
            result.append(character)
        }
        return result
    }
}

// MARK: - bash

private struct BashCompletion {
    let root: CommandSpec
    let commands: [(path: [String], spec: CommandSpec)]

    private var prefix: String { "__" + CompletionScript.identifier(root.name) }

    private func key(_ path: [String]) -> String {
        path.map(CompletionScript.identifier).joined(separator: "_")
    }

    private func quoted(_ text: String) -> String {
        CompletionScript.singleQuoted(text)
    }

    private func action(_ hint: CompletionHint) -> String? {
        switch hint {
        case .file: return "\(prefix)_files"
        case .directory: return "\(prefix)_directories"
        case .values(let values): return "\(prefix)_words \(quoted(wordList(values)))"
        case .none: return nil
        }
    }

    /// Words for `compgen -W`, which expands its word list: shell-special characters are backslash-escaped.
    private func wordList(_ words: [String]) -> String {
        words.map { word in
            var escaped = ""
            for character in word {
                if !(character.isLetter || character.isNumber || "-_.,:/=+@%^".contains(character)) {
                    escaped.append("\\")
                }
                escaped.append(character)
            }
            return escaped
        }.joined(separator: " ")
    }

    func script() -> String {
        let main = "_" + CompletionScript.identifier(root.name)
        var lines: [String] = [
            "# bash completion for \(root.name) (generated; do not edit).",
            "",
            "\(prefix)_words() {",
            "    local IFS=$' \\t\\n'",
            "    COMPREPLY=($(compgen -W \"$1\" -- \"$cur\"))",
            "}",
            "",
            "\(prefix)_files() {",
            "    compopt -o filenames 2>/dev/null",
            "    local IFS=$'\\n'",
            "    COMPREPLY=($(compgen -f -- \"$cur\"))",
            "}",
            "",
            "\(prefix)_directories() {",
            "    compopt -o filenames 2>/dev/null",
            "    local IFS=$'\\n'",
            "    COMPREPLY=($(compgen -d -- \"$cur\"))",
            "}",
            "",
            "# Succeeds if option $2 of command $1 takes a value in the next word.",
            "\(prefix)_takes_value() {",
            "    case \"$1\" in",
        ]
        for (path, spec) in commands {
            let spellings = spec.options.filter(\.takesValue).flatMap(CompletionScript.spellings)
            guard !spellings.isEmpty else { continue }
            lines += [
                "        \(key(path)))",
                "            case \"$2\" in",
                "                \(spellings.map(quoted).joined(separator: "|"))) return 0 ;;",
                "            esac",
                "            ;;",
            ]
        }
        lines += [
            "    esac",
            "    return 1",
            "}",
            "",
            "\(main)() {",
            "    local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"\"",
            "    if [[ $COMP_CWORD -ge 1 ]]; then prev=\"${COMP_WORDS[COMP_CWORD-1]}\"; fi",
            "    # With '=' in COMP_WORDBREAKS, '--opt=value' arrives as three words.",
            "    if [[ \"$cur\" == \"=\" ]]; then",
            "        cur=\"\"",
            "    elif [[ \"$prev\" == \"=\" && $COMP_CWORD -ge 2 ]]; then",
            "        prev=\"${COMP_WORDS[COMP_CWORD-2]}\"",
            "    fi",
            "    COMPREPLY=()",
            "",
            "    # Find the (sub)command being completed and the index of the positional argument.",
            "    local command=\(key([root.name])) position=0 options_ended=0 index=1 word",
            "    while [[ $index -lt $COMP_CWORD ]]; do",
            "        word=\"${COMP_WORDS[index]}\"",
            "        index=$((index + 1))",
            "        if [[ $options_ended -eq 0 && \"$word\" == -?* ]]; then",
            "            if [[ \"$word\" == \"--\" ]]; then",
            "                options_ended=1",
            "            elif [[ \"${COMP_WORDS[index]}\" == \"=\" ]]; then",
            "                index=$((index + 2))",
            "            elif \(prefix)_takes_value \"$command\" \"$word\"; then",
            "                index=$((index + 1))",
            "            fi",
            "            continue",
            "        fi",
            "        case \"$command\" in",
        ]
        for (path, spec) in commands where !spec.subcommands.isEmpty {
            lines += ["            \(key(path)))", "                case \"$word\" in"]
            var names = spec.subcommands.map(\.name)
            if path.count == 1 { names.append("help") }
            for name in names {
                let target =
                    name == "help" && path.count == 1 && spec.subcommand(named: "help") == nil
                    ? key(path) + "__help" : key(path + [name])
                lines.append(
                    "                    \(quoted(name))) command=\(target); position=0; continue ;;")
            }
            lines += ["                esac", "                ;;"]
        }
        lines += [
            "        esac",
            "        position=$((position + 1))",
            "    done",
            "",
            "    if [[ $options_ended -eq 0 ]]; then",
            "        # The value of an option.",
            "        case \"$command\" in",
        ]
        for (path, spec) in commands {
            let valued = spec.options.filter(\.takesValue)
            guard !valued.isEmpty else { continue }
            lines += ["            \(key(path)))", "                case \"$prev\" in"]
            for option in valued {
                let pattern = CompletionScript.spellings(option).map(quoted).joined(separator: "|")
                let body = action(option.effectiveCompletion).map { "\($0); return 0" } ?? "return 0"
                lines.append("                    \(pattern)) \(body) ;;")
            }
            lines += ["                esac", "                ;;"]
        }
        lines += [
            "        esac",
            "        # Option names.",
            "        if [[ \"$cur\" == -* ]]; then",
            "            case \"$command\" in",
        ]
        for (path, spec) in commands {
            var names = spec.options.map { "--\($0.long)" }
            if path.count == 1 { names.append("--version") }
            names.append("--help")
            lines.append("                \(key(path))) \(prefix)_words \(quoted(wordList(names))) ;;")
        }
        lines += [
            "            esac",
            "            return 0",
            "        fi",
            "    fi",
            "",
            "    # Subcommand names and positional arguments.",
            "    case \"$command\" in",
        ]
        for (path, spec) in commands {
            if !spec.subcommands.isEmpty {
                var names = spec.subcommands.map(\.name)
                if path.count == 1 {
                    lines.append("        \(key(path))__help) \(prefix)_words \(quoted(wordList(names))) ;;")
                    names.append("help")
                }
                lines.append("        \(key(path))) \(prefix)_words \(quoted(wordList(names))) ;;")
                continue
            }
            let actions = spec.arguments.map { action($0.completion) }
            guard actions.contains(where: { $0 != nil }) else { continue }
            lines += ["        \(key(path)))", "            case \"$position\" in"]
            for (index, argument) in spec.arguments.enumerated() {
                let pattern = argument.isVariadic ? "*" : String(index)
                lines.append("                \(pattern)) " + (actions[index].map { $0 + " " } ?? "") + ";;")
            }
            lines += ["            esac", "            ;;"]
        }
        lines += [
            "    esac",
            "    return 0",
            "}",
            "",
            "complete -F \(main) \(quoted(root.name))",
        ]
        return lines.joined(separator: "\n") + "\n"
    }
}

// MARK: - zsh

private struct ZshCompletion {
    let root: CommandSpec
    let commands: [(path: [String], spec: CommandSpec)]

    private func function(_ path: [String]) -> String {
        "_" + path.map(CompletionScript.identifier).joined(separator: "_")
    }

    private func quoted(_ text: String) -> String {
        CompletionScript.singleQuoted(text)
    }

    /// Help text for inside `[...]` of an `_arguments` spec.
    private func description(_ text: String) -> String {
        text.escaping(["\\", "[", "]"])
    }

    private func action(_ hint: CompletionHint) -> String {
        switch hint {
        case .file: return "_files"
        case .directory: return "_files -/"
        case .values(let values):
            let escaped = values.map { $0.escaping(["\\", " ", "(", ")", ":", "'", "\"", "$", "`"]) }
            return "(\(escaped.joined(separator: " ")))"
        case .none: return " "
        }
    }

    private func optionSpecs(_ spec: CommandSpec, isRoot: Bool) -> [String] {
        var specs: [String] = []
        for option in spec.options {
            let help = description(option.help)
            let repeatable: Bool
            if case .repeatable = option.kind { repeatable = true } else { repeatable = false }
            var value = ""
            if let valueName = option.kind.valueName {
                let message = valueName.lowercased().escaping(["\\", ":"])
                value = ":\(message):\(action(option.effectiveCompletion))"
            }
            let longForm = "--\(option.long)" + (option.takesValue ? "=" : "")
            if let short = option.short {
                let shortForm = "-\(short)" + (option.takesValue ? "+" : "")
                let exclusion = repeatable ? "*" : "(-\(short) --\(option.long))"
                specs.append("\(quoted(exclusion)){\(shortForm),\(longForm)}\(quoted("[\(help)]\(value)"))")
            } else {
                specs.append(quoted((repeatable ? "*" : "") + "\(longForm)[\(help)]\(value)"))
            }
        }
        if isRoot {
            specs.append(quoted("--version[Show the version.]"))
        }
        specs.append("'(-h --help)'{-h,--help}'[Show help information.]'")
        return specs
    }

    private func argumentSpecs(_ spec: CommandSpec) -> [String] {
        spec.arguments.map { argument in
            let message = argument.name.lowercased().escaping(["\\", ":"])
            let head = argument.isVariadic ? "*:" : (argument.isOptional ? "::" : ":")
            return quoted("\(head)\(message):\(action(argument.completion))")
        }
    }

    private func body(_ specs: [String], options: String) -> [String] {
        ["    _arguments \(options) \\"]
            + specs.enumerated().map { index, spec in
                "        " + spec + (index == specs.count - 1 ? "" : " \\")
            }
    }

    func script() -> String {
        let main = function([root.name])
        var lines = [
            "#compdef \(root.name)",
            "# zsh completion for \(root.name) (generated; do not edit).",
        ]
        for (path, spec) in commands {
            lines += ["", "\(function(path))() {"]
            let isRoot = path.count == 1
            if spec.subcommands.isEmpty {
                lines += body(optionSpecs(spec, isRoot: isRoot) + argumentSpecs(spec), options: "-s")
                lines.append("}")
                continue
            }
            var items = spec.subcommands.map { "\($0.name.escaping(["\\", ":"])):\($0.abstract)" }
            if isRoot {
                items.append("help:Show help information for a subcommand.")
            }
            let tag = quoted("\(path.joined(separator: " ")) subcommand")
            let context = CompletionScript.identifier(path.joined(separator: "-"))
            lines += [
                "    local curcontext=\"$curcontext\" state state_descr line",
                "    typeset -A opt_args",
                "    local -a subcommands",
                "    subcommands=(",
            ]
            lines += items.map { "        " + quoted($0) }
            lines.append("    )")
            let specs = optionSpecs(spec, isRoot: isRoot) + ["'1: :->subcommand'", "'*:: :->argument'"]
            lines += body(specs, options: "-C -s")
            lines[lines.count - 1] += " && return 0"
            lines += [
                "    case $state in",
                "        (subcommand)",
                "            _describe -t subcommands \(tag) subcommands",
                "            ;;",
                "        (argument)",
                "            curcontext=\"${curcontext%:*:*}:\(context)-${words[1]}:\"",
                "            case ${words[1]} in",
            ]
            for subcommand in spec.subcommands {
                lines.append(
                    "                (\(quoted(subcommand.name))) \(function(path + [subcommand.name])) ;;")
            }
            if isRoot {
                lines.append("                (help) _describe -t subcommands \(tag) subcommands ;;")
            }
            lines += [
                "            esac",
                "            ;;",
                "    esac",
                "}",
            ]
        }
        lines += [
            "",
            "if [[ \"${funcstack[1]}\" == \(main) ]]; then",
            "    \(main) \"$@\"",
            "else",
            "    compdef \(main) \(quoted(root.name))",
            "fi",
        ]
        return lines.joined(separator: "\n") + "\n"
    }
}

// MARK: - fish

private struct FishCompletion {
    let root: CommandSpec
    let commands: [(path: [String], spec: CommandSpec)]

    private var prefix: String { "__" + CompletionScript.identifier(root.name) }

    /// `text` as a fish single-quoted string (only `\` and `'` are escaped there).
    private func quoted(_ text: String) -> String {
        "'" + text.escaping(["\\", "'"]) + "'"
    }

    private func condition(_ path: [String]) -> String {
        quoted(
            "\(prefix)_using_command "
                + path.map { $0.escaping(["\\", "'", " ", "\"", "$"]) }.joined(separator: " "))
    }

    private func completion(_ hint: CompletionHint) -> String {
        switch hint {
        case .file: return "-r -F"
        case .directory: return "-x -a '(__fish_complete_directories)'"
        case .values(let values):
            return "-x -a \(quoted(values.map { $0.escaping(["\\", " "]) }.joined(separator: " ")))"
        case .none: return "-x"
        }
    }

    func script() -> String {
        let name = quoted(root.name)
        var lines = [
            "# fish completion for \(root.name) (generated; do not edit).",
            "",
            "# Prints the subcommand names of the command path $argv[1].",
            "function \(prefix)_subcommands",
            "    switch $argv[1]",
        ]
        for (path, spec) in commands where !spec.subcommands.isEmpty {
            var names = spec.subcommands.map(\.name)
            if path.count == 1 { names.append("help") }
            lines += [
                "        case \(quoted(path.joined(separator: " ")))",
                "            printf '%s\\n' \(names.map(quoted).joined(separator: " "))",
            ]
        }
        lines += [
            "    end",
            "end",
            "",
            "# Succeeds if option $argv[2] of command path $argv[1] takes a value in the next token.",
            "function \(prefix)_takes_value",
            "    switch $argv[1]",
        ]
        for (path, spec) in commands {
            let spellings = spec.options.filter(\.takesValue).flatMap(CompletionScript.spellings)
            guard !spellings.isEmpty else { continue }
            lines += [
                "        case \(quoted(path.joined(separator: " ")))",
                "            contains -- $argv[2] \(spellings.map(quoted).joined(separator: " "))",
                "            return",
            ]
        }
        lines += [
            "    end",
            "    return 1",
            "end",
            "",
            "# Prints the command path (e.g. '\(root.name) blob get') of the command line being completed.",
            "function \(prefix)_command_path",
            "    set -l tokens (commandline -opc)",
            "    set -e tokens[1]",
            "    set -l path \(name)",
            "    set -l skip 0",
            "    set -l options_ended 0",
            "    for token in $tokens",
            "        if test $skip -eq 1",
            "            set skip 0",
            "            continue",
            "        end",
            "        if test $options_ended -eq 0; and string match -q -- '-?*' $token",
            "            if test \"$token\" = '--'",
            "                set options_ended 1",
            "            else if \(prefix)_takes_value \"$path\" $token",
            "                set skip 1",
            "            end",
            "            continue",
            "        end",
            "        if contains -- $token (\(prefix)_subcommands \"$path\")",
            "            set path \"$path $token\"",
            "        end",
            "    end",
            "    echo $path",
            "end",
            "",
            "# Succeeds if the command line being completed is for the command path $argv.",
            "function \(prefix)_using_command",
            "    test (\(prefix)_command_path) = \"$argv\"",
            "end",
            "",
            "complete -c \(name) -f",
        ]
        for (path, spec) in commands {
            let when = condition(path)
            lines.append("")
            for subcommand in spec.subcommands {
                let summary = quoted(subcommand.abstract)
                lines.append("complete -c \(name) -n \(when) -a \(quoted(subcommand.name)) -d \(summary)")
            }
            if path.count == 1 && !spec.subcommands.isEmpty {
                let summary = quoted("Show help information for a subcommand.")
                lines.append("complete -c \(name) -n \(when) -a help -d \(summary)")
                let names = spec.subcommands.map(\.name).joined(separator: " ")
                lines.append("complete -c \(name) -n \(condition(path + ["help"])) -a \(quoted(names))")
            }
            for option in spec.options {
                var parts = ["complete -c \(name) -n \(when)"]
                if let short = option.short { parts.append("-s \(quoted(String(short)))") }
                parts.append("-l \(quoted(option.long))")
                if option.takesValue { parts.append(completion(option.effectiveCompletion)) }
                parts.append("-d \(quoted(option.help))")
                lines.append(parts.joined(separator: " "))
            }
            if path.count == 1 {
                lines.append("complete -c \(name) -n \(when) -l version -d \(quoted("Show the version."))")
            }
            lines.append("complete -c \(name) -n \(when) -s h -l help -d \(quoted("Show help information."))")
            // Positional arguments: fish cannot tell positions apart cheaply, so offer the union.
            var hints: [CompletionHint] = []
            for argument in spec.arguments
            where argument.completion != .none && !hints.contains(argument.completion) {
                hints.append(argument.completion)
            }
            if hints.contains(.file) {
                hints.removeAll { $0 == .directory }
            }
            for hint in hints {
                switch hint {
                case .file: lines.append("complete -c \(name) -n \(when) -F")
                case .directory:
                    lines.append("complete -c \(name) -n \(when) -a '(__fish_complete_directories)'")
                case .values(let values):
                    let words = values.map { $0.escaping(["\\", " "]) }.joined(separator: " ")
                    lines.append("complete -c \(name) -n \(when) -a \(quoted(words))")
                case .none: break
                }
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
