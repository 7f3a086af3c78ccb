# Doxygen's INPUT_FILTER for cuscope's headers (sed -E): their comments are
# plain C comments, which doxygen skips, so this turns them into doxygen's.
# The headers themselves stay as they are (VERBATIM_HEADERS shows them whole).

# The header's opening comment, "/* cuscope/x.h: what it is", is the file's:
# @file goes at its end, so that the line numbers stay the header's.
1s,^/\* cuscope/[a-z_0-9]+\.h: ,/** ,
0,/\*\//s,\*/([[:space:]]*)$,@file */\1,

# One-line section rules ("/* --- graphs --- */") and tool markers stay plain.
/^[[:space:]]*\/\* -{3}.*\*\/[[:space:]]*$/b
/^[[:space:]]*\/\* clang-format/b

# A section comment with text under its rule is the file's: it goes to the
# file page, its title in bold before its text, and documents no declaration
# (a declaration after it has its own comment). Two lines stay two lines, so
# that doxygen's line numbers are the header's.
/^[[:space:]]*\/\* -{3} (.*[^ -]) -+[[:space:]]*$/{
    N
    s,^([[:space:]]*)/\* -{3} (.*[^ -]) -+[[:space:]]*\n([[:space:]]*)\* ,\1/** @file\n\3* **\2.** ,
}

# A comment after a member, an enumerator or a parameter documents it.
s,([;,])([[:space:]]*)/\* ,\1\2/**< ,

# A comment on lines of its own documents what follows it.
s,^([[:space:]]*)/\* ,\1/** ,

# A member line that declares several ("unsigned int x, y, z; /* doc */")
# becomes, on the same line (so that line numbers stay), one declaration per
# name, each with the line's comment: doxygen documents only the last name of
# such a line.
:split
s,(^[[:space:]]+|\*/ |; )([A-Za-z_][A-Za-z_0-9 ]*[A-Za-z_0-9]) (\**[A-Za-z_][A-Za-z_0-9]*(\[[^]]*\])?)\, ([^;=(){}]*;)(.*)$,\1\2 \3;\6 \2 \5\6,
t split
