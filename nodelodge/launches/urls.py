from django.urls import path

from . import views

app_name = "launches"
urlpatterns = [
    path("launch/", views.launch, name="launch"),
    path("launch/review/", views.review, name="review"),
    path("launches/", views.booking_list, name="list"),
    path("launches/<int:pk>/stop/", views.stop, name="stop"),
    path("launch/group/review/", views.group_review, name="group_review"),
    path("launch/group/", views.group_launch, name="group_launch"),
    path("launches/group/<int:pk>/stop/", views.group_stop, name="group_stop"),
]
