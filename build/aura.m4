dnl Licensed under the Apache License, Version 2.0 (see LICENSE).
dnl
dnl aura.m4: configure checks for mod_aura.  Each failing check names the
dnl Debian package that provides what is missing (build/install-deps
dnl installs them all).

dnl AURA_CHECK_APXS: find apxs and ask it where httpd's headers are.
AC_DEFUN([AURA_CHECK_APXS], [
  AC_ARG_WITH([apxs],
    [AS_HELP_STRING([--with-apxs=PATH], [path to apxs (default: search PATH)])],
    [APXS="$withval"], [APXS=""])
  if test -z "$APXS"; then
    AC_PATH_PROGS([APXS], [apxs apxs2], [], [$PATH:/usr/bin:/usr/sbin])
  fi
  if test -z "$APXS" || test ! -x "$APXS"; then
    AC_MSG_ERROR([apxs not found: install the Debian package apache2-dev (or pass --with-apxs=PATH)])
  fi
  AP_INCLUDEDIR=`$APXS -q INCLUDEDIR`
  AP_LIBEXECDIR=`$APXS -q LIBEXECDIR`
  AP_CPPFLAGS="`$APXS -q EXTRA_CPPFLAGS` -I$AP_INCLUDEDIR"
  AP_SBINDIR=`$APXS -q SBINDIR`
  AP_PROGNAME=`$APXS -q PROGNAME`
  if test ! -f "$AP_INCLUDEDIR/httpd.h"; then
    AC_MSG_ERROR([httpd.h not found in $AP_INCLUDEDIR: install the Debian package apache2-dev])
  fi
  AC_SUBST([APXS])
  AC_SUBST([AP_INCLUDEDIR])
  AC_SUBST([AP_LIBEXECDIR])
  AC_SUBST([AP_CPPFLAGS])
  AC_SUBST([AP_SBINDIR])
  AC_SUBST([AP_PROGNAME])
])

dnl AURA_CHECK_PKG(VAR, pkg-config-name, debian-package, header[, includes])
dnl Sets VAR_CFLAGS and VAR_LIBS from pkg-config and checks the header.
AC_DEFUN([AURA_CHECK_PKG], [
  AC_MSG_CHECKING([for $2])
  if $PKG_CONFIG --exists "$2" 2>/dev/null; then
    $1_CFLAGS=`$PKG_CONFIG --cflags "$2"`
    $1_LIBS=`$PKG_CONFIG --libs "$2"`
    AC_MSG_RESULT([yes])
  else
    AC_MSG_RESULT([no])
    AC_MSG_ERROR([$2 not found: install the Debian package $3])
  fi
  aura_save_CPPFLAGS="$CPPFLAGS"
  CPPFLAGS="$CPPFLAGS $$1_CFLAGS"
  AC_CHECK_HEADER([$4], [],
    [AC_MSG_ERROR([$4 not found: install the Debian package $3])],
    [m4_default([$5], [AC_INCLUDES_DEFAULT])])
  CPPFLAGS="$aura_save_CPPFLAGS"
  AC_SUBST([$1_CFLAGS])
  AC_SUBST([$1_LIBS])
])
